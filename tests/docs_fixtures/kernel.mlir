// A linalg kernel for the documented mlir-opt-19 commands (docs/mlir-plugin.md).
func.func @kernel(%a: memref<256x128xf32>, %b: memref<128x512xf32>,
                  %c: memref<256x512xf32>) {
  linalg.matmul ins(%a, %b : memref<256x128xf32>, memref<128x512xf32>)
                outs(%c : memref<256x512xf32>)
  return
}
