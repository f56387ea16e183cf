# cmake/KtuneOriginalBuilds.cmake: KTUNE_ORIGINAL_BUILD_<name>, the code-generating flags of each upstream build
# ktune knows. Read by cmake/KtuneVariants.cmake (S's units) and bench/upstream (the upstream kernels and its copy of S).
include_guard(GLOBAL)

# The builds an op's S may name in its spec.json ("original_build"): S re-expresses an upstream kernel, and
# its unit is compiled with the flags of that kernel's own build that change the code, so S's registers,
# occupancy and math are what the upstream project runs (the other variants keep ktune's flags).
# sgl-kernel: sgl-kernel/CMakeLists.txt at sglang 00390b8633f9 (SGL_KERNEL_CUDA_FLAGS and -use_fast_math);
# bench/upstream/CMakeLists.txt, which compiles the upstream kernels themselves, says why its other flags
# change no instruction. Measured with ptxas (nvcc 13.0, sm_90): fused_add_rmsnorm's S takes 40-41
# registers in fp16/bf16 and 60 in fp32 (FlashInfer's kernel: 36-38 and 66), against 29-32 with ktune's
# flags, which fitted two 1024-thread blocks per SM where upstream fits one.
set(KTUNE_ORIGINAL_BUILD_sgl-kernel -use_fast_math -maxrregcount=128)
