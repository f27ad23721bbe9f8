//===- GPULowering.cpp - helpers of the htmpl GPU kernels -------*- C++ -*-===//

#include "GPULowering.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

Value hector::gpu::ceilDiv(OpBuilder &b, Location loc, Value a, Value divisor) {
  return b.createOrFold<arith::CeilDivUIOp>(loc, a, divisor);
}

Value hector::gpu::minIndex(OpBuilder &b, Location loc, Value a, Value c) {
  return b.createOrFold<arith::MinSIOp>(loc, a, c);
}

Value hector::gpu::maxIndex(OpBuilder &b, Location loc, Value a, Value c) {
  return b.createOrFold<arith::MaxSIOp>(loc, a, c);
}

Value hector::gpu::andAll(OpBuilder &b, Location loc, ArrayRef<Value> conds) {
  Value result;
  for (Value c : conds)
    result = result ? b.createOrFold<arith::AndIOp>(loc, result, c) : c;
  return result;
}

Value hector::gpu::startsAligned(OpBuilder &b, Location loc, Value memref,
                                 int64_t bytes) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  int64_t elementBytes =
      cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
  Value start = arith::AddIOp::create(
      b, loc, base,
      arith::MulIOp::create(b, loc, meta.getOffset(),
                            constIndex(b, loc, elementBytes)));
  Value rem = arith::RemUIOp::create(b, loc, start, constIndex(b, loc, bytes));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem,
                               constIndex(b, loc, 0));
}

Value hector::gpu::zeroOf(OpBuilder &b, Location loc, Type type) {
  return arith::ConstantOp::create(b, loc,
                                   cast<TypedAttr>(b.getZeroAttr(type)));
}

hector::gpu::FlatLaunch hector::gpu::createFlatLaunch(OpBuilder &b,
                                                      Location loc, Value count,
                                                      int64_t threads) {
  Value perBlock = constIndex(b, loc, threads);
  Launch launch =
      createLaunch(b, loc, ceilDiv(b, loc, count, perBlock),
                   constIndex(b, loc, 1), constIndex(b, loc, 1), threads);
  Value id = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.blockX, perBlock),
      launch.thread);
  Value inside =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, id, count);
  return {launch, id, inside};
}

MemRefType hector::gpu::workgroupType(ArrayRef<int64_t> shape, Type element) {
  auto space = mlir::gpu::AddressSpaceAttr::get(
      element.getContext(), mlir::gpu::GPUDialect::getWorkgroupAddressSpace());
  return MemRefType::get(shape, element, MemRefLayoutAttrInterface(), space);
}

hector::gpu::Launch hector::gpu::createLaunch(OpBuilder &b, Location loc,
                                              Value gx, Value gy, Value gz,
                                              int64_t threads,
                                              ArrayRef<MemRefType> shared) {
  Value c1 = constIndex(b, loc, 1);
  SmallVector<Type> sharedTypes(shared.begin(), shared.end());
  auto launch = mlir::gpu::LaunchOp::create(
      b, loc, maxIndex(b, loc, gx, c1), maxIndex(b, loc, gy, c1),
      maxIndex(b, loc, gz, c1), constIndex(b, loc, threads), c1, c1,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, sharedTypes);
  Block &body = launch.getBody().front();
  if (body.empty() || !body.back().hasTrait<OpTrait::IsTerminator>()) {
    b.setInsertionPointToEnd(&body);
    mlir::gpu::TerminatorOp::create(b, loc);
  }
  b.setInsertionPoint(body.getTerminator());
  Launch result;
  result.op = launch;
  result.blockX = launch.getBlockIds().x;
  result.blockY = launch.getBlockIds().y;
  result.blockZ = launch.getBlockIds().z;
  result.thread = launch.getThreadIds().x;
  llvm::append_range(result.shared, launch.getWorkgroupAttributions());
  return result;
}

void hector::gpu::emitZeroFill(OpBuilder &b, Location loc, Value buffer,
                               int64_t threads) {
  OpBuilder::InsertionGuard insertion(b);
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<Value> dims;
  Value total = constIndex(b, loc, 1);
  for (int64_t d = 0; d < type.getRank(); ++d) {
    dims.push_back(dimOf(b, loc, buffer, d));
    total = b.createOrFold<arith::MulIOp>(loc, total, dims.back());
  }
  FlatLaunch flat = createFlatLaunch(b, loc, total, threads);
  Value id = flat.id, inside = flat.inside;
  auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  // Row-major delinearisation, innermost dimension first.
  SmallVector<Value> indices(dims.size());
  Value rest = id;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    indices[d] = arith::RemUIOp::create(b, loc, rest, dims[d]);
    rest = arith::DivUIOp::create(b, loc, rest, dims[d]);
  }
  memref::StoreOp::create(b, loc, zeroOf(b, loc, type.getElementType()), buffer,
                          indices);
}
