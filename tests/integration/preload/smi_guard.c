/* smi_guard: stands in for nvidia-smi, built static so that no preload library runs in it: fails
 * loudly when it inherits GPURUN_OPTIONS (the preload would have chosen again inside it, probing
 * with another nvidia-smi, forever), else runs the fake nvidia-smi named by its build. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	(void)argc;
	if (getenv("GPURUN_OPTIONS")) {
		fprintf(stderr, "smi_guard: nvidia-smi inherited GPURUN_OPTIONS\n");
		return 99;
	}
	argv[0] = FAKE_NVIDIA_SMI;
	execv(FAKE_NVIDIA_SMI, argv);
	perror("smi_guard: " FAKE_NVIDIA_SMI);
	return 127;
}
