/* cuda_calls: three CUDA runtime calls for the live API tests (tests/live/test_live_api.cpp), linked dynamically
 * against the toolkit's libcudart.so.13. With no driver, each returns a non-success cudaError_t
 * (cudaErrorInsufficientDriver, 35, when libcudart finds no libcuda.so.1; cudaErrorStubLibrary, 34, with the
 * toolkit's stub as libcuda.so.1). Prints "NAME=RESULT" per call and "host=ADDRESS" so that the test can compare
 * the arguments the probes read with the ones passed. Exit 0 whatever the results. */
#include <stdio.h>

#include <cuda_runtime_api.h>

static char host[4096];

int main(void) {
    void* device = NULL;
    cudaError_t m = cudaMalloc(&device, (size_t)1 << 20);
    cudaError_t c = cudaMemcpy(device, host, sizeof host, cudaMemcpyHostToDevice);
    cudaError_t r = cudaHostRegister(host, sizeof host, cudaHostRegisterPortable);
    printf("cudaMalloc=%d cudaMemcpy=%d cudaHostRegister=%d host=%p size=%zu\n", (int)m, (int)c, (int)r, (void*)host,
           sizeof host);
    return 0;
}
