/* SPDX-License-Identifier: GPL-2.0 */
#ifndef AGENT_LOG_H
#define AGENT_LOG_H

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
};

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Returns 0 and sets *level, or -1 for an unknown name. */
int log_parse_level(const char *name, enum log_level *level);
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...)	log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
