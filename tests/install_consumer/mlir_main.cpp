// A downstream MLIR tool using the installed mlbridge_mlir: the features of
// a linalg.matmul, the heuristic's tile sizes through a TileSizeAdvisor
// without a model, and tileLinalgOp applying them (three scf.for loops).
#include "mlbridge/mlir/LinalgFeatures.h"
#include "mlbridge/mlir/TileSizeAdvisor.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <cstdio>

using namespace mlbridge::mlirtiling;

int main() {
  // Linalg's TilingInterface is an external model a tool registers (mlir-opt
  // registers them all).
  mlir::DialectRegistry Registry;
  mlir::linalg::registerTilingInterfaceExternalModels(Registry);
  mlir::MLIRContext Context(Registry);
  Context.loadDialect<mlir::affine::AffineDialect, mlir::arith::ArithDialect,
                      mlir::func::FuncDialect, mlir::linalg::LinalgDialect,
                      mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                      mlir::tensor::TensorDialect>();
  auto Module = mlir::parseSourceString<mlir::ModuleOp>(
      "func.func @k(%a: memref<128x64xf32>, %b: memref<64x96xf32>, "
      "%c: memref<128x96xf32>) {\n"
      "  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x96xf32>) "
      "outs(%c : memref<128x96xf32>)\n  return\n}\n",
      &Context);
  if (!Module)
    return 1;
  mlir::linalg::LinalgOp Matmul;
  Module->walk([&](mlir::linalg::LinalgOp Op) { Matmul = Op; });
  const TilingFeatures F = readTilingFeatures(Matmul);
  TileSizeAdvisor Advisor(nullptr);
  TileDecision D = Advisor.advise("k", F);
  mlir::IRRewriter Rewriter(&Context);
  if (D.FromModel || mlir::failed(tileLinalgOp(Rewriter, Matmul, D.Sizes)) ||
      mlir::failed(mlir::verify(*Module)))
    return 1;
  int Loops = 0;
  Module->walk([&](mlir::scf::ForOp) { ++Loops; });
  std::printf("mlir ok: ranges %lld %lld %lld, sizes %lld %lld %lld, %d "
              "loops\n",
              (long long)F.LoopRanges[0], (long long)F.LoopRanges[1],
              (long long)F.LoopRanges[2], (long long)D.Sizes[0],
              (long long)D.Sizes[1], (long long)D.Sizes[2], Loops);
  return Loops == 3 ? 0 : 1;
}
