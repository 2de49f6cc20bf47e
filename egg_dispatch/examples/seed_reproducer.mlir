// seed_reproducer.mlir: egg_dispatch's built-in example, the program from IREE issue #21100,
// "[DispatchCreation] Failed to hoist out of dispatch in DT-fusion", kept in the form the report used.
//
// A 16x8 f32 constant is split into its two 8x8 row halves; each half is the LHS of a matmul whose RHS
// (a function argument) is transposed, accumulating into a zero-filled 8x8 tensor. On the
// DispatchCreation data-tiling path (then enabled with --iree-dispatch-creation-experimental-data-tiling)
// IREE cloned each slice into its matmul's dispatch before setting encodings, so
// set_encoding(extract_slice(constant)) sat inside the dispatch next to its producer; HoistEncodingOps
// could not move it out and compilation failed.
//
// Spelling notes. This is the reported spelling, not IREE 3.13's; egg_dispatch hands IREE the program as read:
//   * linalg.matmul_transpose_b, retired upstream: IREE 3.13 writes linalg.matmul with indexing_maps
//     [(d0, d2), (d1, d2), (d0, d1)] and no longer parses the old name; egg_dispatch reads it as that.
//   * The constant is a dense_resource whose blob was elided from the report (no dialect_resources
//     section follows). egg_dispatch fills a missing blob with deterministic pseudo-random data and
//     prints a warning, so the example still evaluates (and IREE compiles it, with the same data).
func.func @hoist_failure_repro(%rhs_top: tensor<8x8xf32>, %rhs_bottom: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %fused = arith.constant dense_resource<__auto.constant_16_8_torch.float32> : tensor<16x8xf32>
  %top = tensor.extract_slice %fused[0, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %bottom = tensor.extract_slice %fused[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %zero = arith.constant 0.0 : f32

  %init_top = tensor.empty() : tensor<8x8xf32>
  %acc_top = linalg.fill ins(%zero : f32) outs(%init_top : tensor<8x8xf32>) -> tensor<8x8xf32>
  %out_top = linalg.matmul_transpose_b ins(%top, %rhs_top : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc_top : tensor<8x8xf32>) -> tensor<8x8xf32>

  %init_bottom = tensor.empty() : tensor<8x8xf32>
  %acc_bottom = linalg.fill ins(%zero : f32) outs(%init_bottom : tensor<8x8xf32>) -> tensor<8x8xf32>
  %out_bottom = linalg.matmul_transpose_b ins(%bottom, %rhs_bottom : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc_bottom : tensor<8x8xf32>) -> tensor<8x8xf32>

  return %out_top, %out_bottom : tensor<8x8xf32>, tensor<8x8xf32>
}
