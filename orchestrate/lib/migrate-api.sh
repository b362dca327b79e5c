# shellcheck shell=bash
# shellcheck disable=SC2016,SC2034,SC2154 # migrate.sh's options and state (sourced by it); jq's own $variables
# migrate.sh's access to the two agents, sourced by it: the requests go
# through common.sh's agent_api (tokens in header files), the replies are
# read by the fields docs/openapi.yaml documents, and nothing else: a missing
# field is an error naming it.

# jq's must(f): f's value, or an error naming the path when it is absent.
JQ_MUST='def must(f): path(f) as $p | getpath($p) as $v
	| if $v == null then error("no ." + ($p | map(tostring) | join(".")) + " in the reply") else $v end;'

# jqf FILE FILTER [jq args...]: jq -r with must(); dies with jq's message
# (naming the field) when FILTER fails. Assign its output to a variable:
# "[ "$(jqf ...)" = x ]" would not stop the script.
jqf() {
	local file=$1 filter=$2 out
	shift 2
	out=$(jq -r "$@" "$JQ_MUST $filter" "$file" 2>&1) ||
		die "${file##*/}: ${out#jq: error (at *): }"
	printf '%s\n' "$out"
}

# api HOST METHOD PATH [JSON|@FILE] -> body on stdout (a for --from, b for --to).
api() {
	local url=$from auth=$AUTH_A
	[ "$1" = a ] || { url=$to auth=$AUTH_B; }
	agent_api "$2" "$url$3" "$auth" "${4:-}"
}

# api_to HOST METHOD PATH FILE [JSON]: the reply in FILE; non-zero unless 2xx.
api_to() {
	api "$1" "$2" "$3" "${5:-}" >"$4"
}

start_workload() {	# HOST JSON -> id, pid in WL_ID, WL_PID
	api_to "$1" POST /v1/workloads "$out/.started.json" "$2" || return 1
	WL_ID=$(jqf "$out/.started.json" 'must(.id)')
	WL_PID=$(jqf "$out/.started.json" 'must(.pid)')
}

workload_state() {	# HOST ID -> state; "gone" when the agent does not know it (404)
	AGENT_STATUS=""
	if ! api_to "$1" GET "/v1/workloads/$2" "$out/.state.json" 2>/dev/null; then
		if [ "$AGENT_STATUS" = 404 ]; then echo gone; else echo unknown; fi
		return 0
	fi
	jqf "$out/.state.json" 'must(.state)'
}

# The states in which a workload runs no more (docs/api.md, Workload.state).
exited() {	# HOST ID
	local st
	st=$(workload_state "$1" "$2")
	case "$st" in exited|failed|migrated|gone) return 0 ;; esac
	return 1
}

wait_exited() {	# HOST ID SECONDS
	wait_until "$3" "workload $2 on $1 to exit" exited "$1" "$2"
}

fetch_file() {	# HOST ID ledger|log DEST
	api_to "$1" GET "/v1/workloads/$2/$3" "$4"
}

pending_total() {	# HOST ID -> pending_total (reads no record)
	api_to "$1" GET "/v1/workloads/$2/signals?limit=0" "$out/.pending.json" ||
		die "GET /v1/workloads/$2/signals on $1 failed"
	jqf "$out/.pending.json" 'must(.pending_total)'
}

# "3 + 0 + 12 + 7 private + 40 process-wide" of a signals reply.
queue_sizes() {	# FILE
	jqf "$1" '"\([must(.threads)[] | must(.pending.count)] | map(tostring) | join(" + ")) private + \(must(.shared.count)) process-wide"'
}

# A signals reply as sigledger's queue snapshot: "Q <queue> <count>", then
# the queue's records (raw, 128 bytes in hex), oldest first.
queue_snapshot() {	# SIGNALS_JSON DEST
	jqf "$1" '"Q shared \(must(.shared.count))", (must(.shared.signals)[] | must(.raw)),
		(must(.threads)[] | "Q t\(must(.index)) \(must(.pending.count))", (must(.pending.signals)[] | must(.raw)))' >"$2"
}

caps_line() {	# HOST
	jqf "$out/capabilities-$1.json" '"kernel \(must(.kernel.release)), interface \(must(.migration)), agent \(must(.agent_version))"'
}
