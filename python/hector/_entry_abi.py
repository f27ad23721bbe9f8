# Generated from runtime/include/hector/entry_abi.def by
# scripts/generate-abi-tables.py: edit the table there, then run the script
# (test/python/test_abi_tables.py checks that this copy is current).
"""The kinds of entry point and, per role of an argument, what an entry of
each kind (in KINDS' order) does with it: "none" (not allowed), "read", or
"written" (the caller allocates it, the entry point fills it)."""

KINDS = ('inference', 'training_forward', 'training_backward')

ACCESS = {
    'graph': ('read', 'read', 'read'),
    'input': ('read', 'read', 'read'),
    'weight': ('read', 'read', 'read'),
    'output': ('written', 'written', 'written'),
    'saved': ('none', 'written', 'read'),
    'grad_output': ('none', 'none', 'read'),
    'grad': ('none', 'none', 'written'),
}
