/* cudart_count: the real CUDA runtime's cudaGetDeviceCount, built by preload_test.sh against the
 * toolkit in /usr/local/cuda when it is there; prints the runtime's answer. */
#include <stdio.h>

#include <cuda_runtime_api.h>

int main(void)
{
	int count = -1;
	cudaError_t status = cudaGetDeviceCount(&count);

	printf("cudaGetDeviceCount=%d count=%d\n", (int)status, count);
	return 0;
}
