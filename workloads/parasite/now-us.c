// SPDX-License-Identifier: GPL-2.0
/*
 * now-us: CLOCK_MONOTONIC in microseconds, for the guest's shell scripts
 * (busybox date has no sub-second format, /proc/uptime counts in 10 ms).
 */
#include <stdio.h>
#include <time.h>

int main(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		return 1;
	printf("%lld\n", (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
	return 0;
}
