// SPDX-License-Identifier: GPL-2.0
/* The state directory's JSON records (workload records, lease records). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "json_file.h"

int json_file_replace(const char *path, const json_t *o)
{
	char tmp[4096];
	int fd, ret, saved;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ret = json_dumpfd(o, fd, JSON_COMPACT);
	if (close(fd))
		ret = -1;
	if (!ret && !rename(tmp, path))
		return 0;
	saved = errno;
	unlink(tmp);
	errno = saved ? saved : EIO;
	return -1;
}
