"""bench/profile.py (bench/kernel_profile.py) on the CPU: a Hector CPU library's
training step and a torch reference under torch.profiler, end to end; the
GPU-side parsing (Kineto kernel events, Nsight Compute CSV) and the ncu
orchestration against synthetic inputs and a stand-in ncu. Nothing here
asserts how fast anything is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from hectorc_support import REPO, hectorc  # noqa: E402
from hector import models  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "bench"))
import kernel_profile as kp  # noqa: E402

pytestmark = pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")

DATASET, SCALE, WIDTH = "mutag", 0.005, 8
CASE = ["--device", "cpu", "--dataset", DATASET, "--scale", str(SCALE), "--width", str(WIDTH),
        "--warmup", "1", "--iters", "2", "--steps", "3"]


@pytest.fixture(scope="module")
def lib_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("profile-libs")
    src = root / "rgcn.mlir"
    src.write_text(models.generate("rgcn", WIDTH, heads=1))
    subprocess.run([hectorc(), str(src), "--target=cpu", "--training",
                    "-o", str(root / f"librgcn_{WIDTH}_1.so")], check=True)
    return str(root)


def _load(out):
    with open(os.path.join(str(out), "profile.json"), encoding="utf-8") as f:
        return json.load(f)


def test_profiles_a_hector_training_step_on_the_cpu(lib_dir, tmp_path, capsys):
    assert kp.main([*CASE, "--lib-dir", lib_dir, "--model", "rgcn", "--mode", "training",
                    "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    data = _load(tmp_path)
    assert data["status"] == "ok" and data["meta"]["contender"] == "hector"
    assert data["meta"]["kernel_regex"] == "^rgcn.*_kernel"
    s = data["summary"]
    assert s["steps"] == 3 and len(data["steps"]) == 3
    assert s["wall_ms_per_step"] > 0 and s["launches_per_step"] == 0  # no GPU here
    # Each Hector entry call is a host range, once per step.
    assert set(s["host_ranges_ms_per_step"]) == {"hector::rgcn_fwd", "hector::rgcn_bwd"}
    assert all(v > 0 for v in s["host_ranges_ms_per_step"].values())
    # The loss runs in torch between them: its ops are in the CPU table.
    assert any(o["name"] == "aten::log_softmax" and o["count"] == 3 for o in data["cpu_ops"])
    r = data["roofline"]
    assert r["bound_ms"] == max(r["bound_bytes_ms"], r["bound_flops_ms"]) and r["flops_variant"] == "C"
    assert data["event_ms"] > 0 and data["meta"]["graph"]["P"] > 0
    assert os.path.exists(tmp_path / "trace.json")
    assert "host call hector::rgcn_bwd" in printed


def test_profiles_a_torch_reference_and_skips_with_a_reason(tmp_path):
    assert kp.main([*CASE, "--contender", "torch-eager", "--model", "hgt", "--out", str(tmp_path / "e")]) == 0
    data = _load(tmp_path / "e")
    assert data["status"] == "ok" and data["meta"]["kernel_regex"] is None
    assert any(o["name"] == "aten::bmm" for o in data["cpu_ops"])
    assert data["summary"]["host_ranges_ms_per_step"] == {}
    if not hasattr(torch, "compile"):
        assert kp.main([*CASE, "--contender", "torch-compile", "--model", "hgt",
                        "--out", str(tmp_path / "c")]) == 2
        assert _load(tmp_path / "c")["status"] == "skipped"
    with pytest.raises(SystemExit):  # Hector needs its libraries
        kp.parse_args(["--model", "rgcn", "--dataset", DATASET, "--out", str(tmp_path)])


def test_ncu_needs_a_gpu(lib_dir, tmp_path):
    assert kp.main([*CASE, "--lib-dir", lib_dir, "--model", "rgcn", "--ncu", "--out", str(tmp_path)]) == 0
    assert _load(tmp_path)["ncu"] == {"error": "--ncu needs a CUDA device"}


def test_bench_profile_py_does_not_shadow_the_standard_library():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import cProfile, profile; "
            "assert profile.__file__ != sys.argv[1] + '/profile.py', profile.__file__; "
            "assert hasattr(profile, 'Profile'); cProfile.Profile().runcall(len, [])")
    subprocess.run([sys.executable, "-c", code, os.path.join(REPO, "bench")], check=True)


# ------------------------------------------------------------ Kineto trace
def _kernel(name, ts, dur, regs=None):
    args = {"grid": [64, 1, 1], "block": [256, 1, 1]}
    if regs is not None:
        args.update({"registers per thread": regs, "est. achieved occupancy %": 12})
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": 7, "args": args}


def _step(i, ts, dur, cat="user_annotation"):
    return {"ph": "X", "cat": cat, "name": f"{kp.STEP}{i}", "ts": ts, "dur": dur, "pid": 1, "tid": 1}


def test_summarize_trace_splits_steps_and_numbers_kernels_of_one_name():
    events = []
    for i, t0 in enumerate((1000.0, 2000.0)):
        events += [_step(i, t0, 500), _step(i, t0 + 5, 480, cat="gpu_user_annotation"),
                   {"ph": "X", "cat": "user_annotation", "name": "hector::rgcn_fwd", "ts": t0 + 1, "dur": 30},
                   {"ph": "X", "cat": "user_annotation", "name": "hector::rgcn_bwd", "ts": t0 + 100,
                    "dur": 20},
                   _kernel("rgcn_fwd_kernel", t0 + 40, 100, regs=255),
                   _kernel("rgcn_fwd_kernel", t0 + 150, 50, regs=128),
                   _kernel("triton_per_fused_loss", t0 + 210, 10),
                   _kernel("rgcn_bwd_kernel", t0 + 230, 200, regs=254),
                   {"ph": "X", "cat": "gpu_memset", "name": "Memset", "ts": t0 + 35, "dur": 2},
                   {"ph": "X", "cat": "cpu_op", "name": "aten::log_softmax", "ts": t0 + 60, "dur": 9}]
    events.append(_kernel("rgcn_fwd_kernel", 5000, 100))  # outside every step: not counted
    out = kp.summarize_trace(kp.trace_events({"traceEvents": events + [{"ph": "i", "name": "x"}]}),
                             "^rgcn.*_kernel")
    s = out["summary"]
    assert s["steps"] == 2 and s["launches_per_step"] == 4 and s["copies_per_step"] == 1
    assert s["kernel_ms_per_step"] == pytest.approx(0.36)
    assert s["wall_ms_per_step"] == pytest.approx(0.5) and s["gpu_span_ms_per_step"] == pytest.approx(0.39)
    assert s["idle_before_first_kernel_ms"] == pytest.approx(0.04)
    assert s["matched_launches_per_step"] == 3 and s["matched_kernel_ms_per_step"] == pytest.approx(0.35)
    assert s["host_ranges_ms_per_step"] == {"hector::rgcn_bwd": 0.02, "hector::rgcn_fwd": 0.03}
    rows = {r["kernel"]: r for r in out["kernels"]}
    assert list(rows) == ["rgcn_bwd_kernel", "rgcn_fwd_kernel#0", "rgcn_fwd_kernel#1", "triton_per_fused_loss"]
    first = rows["rgcn_fwd_kernel#0"]
    assert (first["count"], first["calls_per_step"], first["mean_us"]) == (2, 1.0, 100.0)
    assert first["registers_per_thread"] == 255 and first["est_occupancy_pct"] == 12
    assert first["grid"] == [64, 1, 1] and first["matched"] and not rows["triton_per_fused_loss"]["matched"]
    assert rows["rgcn_fwd_kernel#1"]["registers_per_thread"] == 128
    assert sum(r["share"] for r in out["kernels"]) == pytest.approx(1.0)
    by_name = {b["name"]: b for b in out["by_name"]}
    assert by_name["rgcn_fwd_kernel"]["kernels"] == 2 and by_name["rgcn_fwd_kernel"]["count"] == 4
    assert out["cpu_ops"] == [{"name": "aten::log_softmax", "count": 2, "sum_us": 18.0}]


# -------------------------------------------------------------- Nsight Compute
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
          '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value",'
          '"Rule Name","Rule Type","Rule Description"')


def _row(kid, kernel, section, name, unit, value):
    return (f'"{kid}","4242","python3","127.0.0.1","{kernel}","1","7","(256, 1, 1)","(1728, 1, 1)","0",'
            f'"9.0","{section}","{name}","{unit}","{value}","","",""')


def ncu_csv():
    rows = ["==PROF== Connected to process 4242", HEADER]
    for kid, kernel, regs, dram, stall in ((0, "rgcn_fwd_kernel", 255, "31.5", "4.2"),
                                           (1, "rgcn_fwd_kernel", 168, "60.1", "1.5"),
                                           (2, "rgcn_bwd_kernel", 254, "12.0", "0.5")):
        rows += [_row(kid, kernel, "GPU Speed Of Light Throughput", "DRAM Throughput", "%", dram),
                 _row(kid, kernel, "GPU Speed Of Light Throughput", "Duration", "nsecond", "1,510,000"),
                 _row(kid, kernel, "GPU Speed Of Light Throughput", "Compute (SM) Throughput", "%", "45.2"),
                 _row(kid, kernel, "Launch Statistics", "Registers Per Thread", "register/thread", regs),
                 _row(kid, kernel, "Occupancy", "Theoretical Occupancy", "%", "12.5"),
                 _row(kid, kernel, "Occupancy", "Achieved Occupancy", "%", "12.1"),
                 _row(kid, kernel, "Occupancy", "", "", ""),  # a rule row: no metric
                 _row(kid, kernel, "Command line profiler metrics",
                      f"{kp.STALL_PREFIX}long_scoreboard{kp.STALL_SUFFIX}", "", stall),
                 _row(kid, kernel, "Command line profiler metrics",
                      f"{kp.STALL_PREFIX}selected{kp.STALL_SUFFIX}", "", "9"),
                 _row(kid, kernel, "Command line profiler metrics",
                      f"{kp.STALL_PREFIX}mio_throttle{kp.STALL_SUFFIX}", "", "2"),
                 _row(kid, kernel, "Command line profiler metrics",
                      f"{kp.STALL_PREFIX}wait{kp.STALL_SUFFIX}", "", "1"),
                 _row(kid, kernel, "Command line profiler metrics",
                      f"{kp.STALL_PREFIX}barrier{kp.STALL_SUFFIX}", "", "0.25")]
    return "\n".join(rows) + "\n"


def test_parse_ncu_csv():
    ks = kp.parse_ncu_csv(ncu_csv())
    assert [k["kernel"] for k in ks] == ["rgcn_fwd_kernel#0", "rgcn_fwd_kernel#1", "rgcn_bwd_kernel"]
    k = ks[0]
    assert k["registers_per_thread"] == 255 and k["dram_pct"] == 31.5 and k["sm_pct"] == 45.2
    assert k["theoretical_occupancy_pct"] == 12.5 and k["achieved_occupancy_pct"] == 12.1
    assert k["duration_us"] == pytest.approx(1510.0)
    assert k["top_stalls"] == [("long_scoreboard", 4.2), ("mio_throttle", 2.0), ("wait", 1.0)]
    assert "selected" not in k["stalls"]
    assert ks[1]["top_stalls"][0] == ("mio_throttle", 2.0)
    assert kp.parse_ncu_csv("no csv here") == []


def test_the_ncu_child_gets_the_same_case(tmp_path):
    args = kp.parse_args(["--lib-dir", "L", "--model", "hgt", "--dataset", "am", "--width", "128",
                          "--heads", "4", "--mode", "training", "--scale", "0.5", "--precision", "tf32",
                          "--loss", "eager", "--out", str(tmp_path), "--ncu"])
    child = kp.parse_args(kp.child_argv(args))
    for key in ("contender", "model", "dataset", "width", "heads", "mode", "scale", "seed", "device",
                "loss", "precision", "warmup", "kernel_regex"):
        assert getattr(child, key) == getattr(args, key), key
    assert child.lib_dir == os.path.abspath("L") and child.ncu_child
    cmd = kp.ncu_command("/x/ncu", args, "/o/ncu")
    assert cmd[:5] == ["/x/ncu", "--target-processes", "all", "--profile-from-start", "off"]
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:^hgt.*_kernel"
    assert [cmd[i + 1] for i, c in enumerate(cmd) if c == "--section"] == list(kp.NCU_SECTIONS)
    assert cmd[cmd.index("--metrics") + 1] == kp.NCU_STALL_METRICS
    assert cmd[cmd.index("-o") + 1] == "/o/ncu" and cmd[cmd.index("-o") + 3].endswith("bench/profile.py")
    assert "--metrics" not in kp.ncu_command("/x/ncu", args, "/o/ncu", stall_metrics=False)


def test_run_ncu_with_a_stand_in(tmp_path):
    """The orchestration: profile to a report (retried without the stall metrics when ncu
    refuses them), import it as CSV, parse it."""
    csv_path = tmp_path / "sample.csv"
    csv_path.write_text(ncu_csv())
    fake = tmp_path / "ncu"
    fake.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import sys
        argv = sys.argv[1:]
        if "--import" in argv:
            sys.stdout.write(open({str(csv_path)!r}).read())
            sys.exit(0)
        if "--metrics" in argv:
            sys.stderr.write("==ERROR== Failed to find metric regex\\n")
            sys.exit(1)
        open(argv[argv.index("-o") + 1] + ".ncu-rep", "w").write("report")
        """))
    fake.chmod(0o755)
    args = kp.parse_args(["--lib-dir", "L", "--model", "rgcn", "--dataset", DATASET, "--out", str(tmp_path),
                          "--ncu-path", str(fake)])
    result = kp.run_ncu(args, str(tmp_path))
    assert "error" not in result, result
    assert "--metrics" not in result["command"] and result["returncode"] == 0
    assert [k["kernel"] for k in result["kernels"]][-1] == "rgcn_bwd_kernel"
    assert (tmp_path / "ncu.csv").read_text() == ncu_csv()
    missing = kp.parse_args(["--lib-dir", "L", "--model", "rgcn", "--dataset", DATASET, "--out", str(tmp_path),
                             "--ncu-path", str(tmp_path / "nothing")])
    assert "not found" in kp.run_ncu(missing, str(tmp_path))["error"]
