#!/usr/bin/env bash
# redis.sh: real Redis servers for the redisbucket tests.
#
#   bash .ci/redis.sh ensure             a redis-server answers PING at 127.0.0.1:6379 (install/start one if not)
#   bash .ci/redis.sh cluster-start DIR  6-node cluster (3 masters, 3 replicas) on free local ports, state in DIR;
#                                        prints one line for eval: export THROTTLE_REDIS_CLUSTER=host:port,...
#   bash .ci/redis.sh cluster-stop DIR   stops exactly the redis-server processes whose pids are in DIR/*.pid
#
# Everything but the export line goes to stderr, so `eval "$(bash .ci/redis.sh cluster-start DIR)"` is safe.
# On failure cluster-start stops what it started, prints `false` for eval (so `set -e` callers stop) and exits 1.
set -euo pipefail

log() { echo "redis.sh: $*" >&2; }

# answers HOST PORT: true when a Redis server replies PONG.
answers() {
	local host=$1 port=$2
	if command -v redis-cli >/dev/null 2>&1; then
		[[ "$(timeout 2 redis-cli -h "$host" -p "$port" ping 2>/dev/null)" == PONG ]]
	else
		timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port && printf 'PING\r\n' >&3 && head -c 7 <&3 | grep -q PONG" 2>/dev/null
	fi
}

# port_free PORT: true when nothing accepts connections on 127.0.0.1:PORT and nothing is bound to it.
port_free() {
	local port=$1
	if command -v ss >/dev/null 2>&1; then
		if ss -Htan "sport = :$port" 2>/dev/null | grep -q .; then
			return 1
		fi
	fi
	! timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null
}

wait_for() { # wait_for SECONDS CMD...: poll CMD every 0.1 s
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		if ((SECONDS >= deadline)); then
			return 1
		fi
		sleep 0.1
	done
}

cmd_ensure() {
	if answers 127.0.0.1 6379; then
		log "redis-server already answers at 127.0.0.1:6379"
		return 0
	fi
	if ! command -v redis-server >/dev/null 2>&1; then
		log "installing redis-server"
		local sudo=""
		if [[ $(id -u) != 0 ]]; then sudo="sudo"; fi
		if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y redis-server >&2; then
			DEBIAN_FRONTEND=noninteractive $sudo apt-get update >&2
			DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y redis-server >&2
		fi
	fi
	log "starting redis-server at 127.0.0.1:6379"
	redis-server --port 6379 --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
		--logfile "${TMPDIR:-/tmp}/throttle-redis-6379.log" >&2
	if ! wait_for 10 answers 127.0.0.1 6379; then
		log "redis-server did not answer at 127.0.0.1:6379 within 10 s"
		return 1
	fi
	log "redis-server answers at 127.0.0.1:6379"
}

# stop_pidfiles DIR: stop the redis-server processes named by DIR/redis-*.pid, and nothing else.
stop_pidfiles() {
	local dir=$1 f pid pids=()
	shopt -s nullglob
	for f in "$dir"/redis-*.pid; do
		pid=$(<"$f")
		if [[ $pid =~ ^[0-9]+$ ]] && [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q redis-server; then
			kill "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
		rm -f "$f"
	done
	for pid in "${pids[@]}"; do
		if ! wait_for 5 bash -c "! kill -0 $pid 2>/dev/null"; then
			log "pid $pid did not exit after SIGTERM; sending SIGKILL"
			kill -9 "$pid" 2>/dev/null || true
		fi
	done
	if ((${#pids[@]} > 0)); then log "stopped ${#pids[@]} redis-server process(es) from $dir"; fi
}

cluster_ok() { # cluster_ok PORT...: every node says ok and knows all nodes, and 3 replicas are linked
	local p replicas=0
	for p in "$@"; do
		local info
		info=$(redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null) || return 1
		grep -q '^cluster_state:ok' <<<"$info" || return 1
		grep -q "^cluster_known_nodes:$#" <<<"$info" || return 1
		if redis-cli -h 127.0.0.1 -p "$p" info replication 2>/dev/null | grep -q '^master_link_status:up'; then
			replicas=$((replicas + 1))
		fi
	done
	((replicas == $# / 2))
}

cmd_cluster_start() {
	local dir=${1:?usage: redis.sh cluster-start DIR}
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local ports=() p tries=0
	p=$((20000 + RANDOM % 20000))
	while ((${#ports[@]} < 6)); do
		if ((tries++ > 500)); then
			log "no free ports found"
			return 1
		fi
		p=$((p + 1))
		if ((p > 55000)); then p=20000; fi
		if port_free "$p" && port_free $((p + 10000)); then
			ports+=("$p")
		fi
	done
	trap 'log "cluster-start failed; stopping what it started"; stop_pidfiles "'"$dir"'"; echo false; exit 1' ERR
	for p in "${ports[@]}"; do
		redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
			--cluster-config-file "nodes-$p.conf" --cluster-node-timeout 2000 --repl-diskless-sync-delay 0 \
			--save "" --appendonly no --dir "$dir" --daemonize yes \
			--pidfile "$dir/redis-$p.pid" --logfile "$dir/redis-$p.log" >&2
	done
	for p in "${ports[@]}"; do
		wait_for 10 answers 127.0.0.1 "$p"
	done
	local addrs=()
	for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
	log "creating cluster on ${addrs[*]}"
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >&2
	if ! wait_for 30 cluster_ok "${ports[@]}"; then
		log "cluster did not reach cluster_state:ok within 30 s"
		false
	fi
	trap - ERR
	log "cluster ready"
	local IFS=,
	echo "export THROTTLE_REDIS_CLUSTER=${addrs[*]}"
}

case ${1:-} in
ensure) cmd_ensure ;;
cluster-start) shift && cmd_cluster_start "$@" ;;
cluster-stop) shift && stop_pidfiles "${1:?usage: redis.sh cluster-stop DIR}" ;;
*)
	echo "usage: $0 ensure | cluster-start DIR | cluster-stop DIR" >&2
	exit 2
	;;
esac
