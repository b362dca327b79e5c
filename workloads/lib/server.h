/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control server (top layer, beside the public API): one thread on a
 * UNIX socket, one request per connection, verbs mapped onto freeze, dump,
 * restore and the core's state machine. docs/control-protocol.md.
 */
#ifndef SIGMIG_SERVER_H
#define SIGMIG_SERVER_H

/*
 * Listen on @path and start the control thread, with every signal blocked.
 * @commit_exit ends the process on COMMIT (NULL: COMMIT is refused).
 */
int sigmig_server_start(const char *path, void (*commit_exit)(void));
void sigmig_server_stop(void);

#endif /* SIGMIG_SERVER_H */
