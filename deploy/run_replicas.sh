#!/usr/bin/env bash
# Starts N lockstep replicas of one model on loopback and nginx in front of them (least_conn, and consistent
# hashing on X-Affinity-Key when a request carries it: deploy/nginx/lockstep.conf.template), all as the current
# user with pid files, logs and temp files under one working directory — no system service. Stays in the
# foreground; Ctrl-C or SIGTERM drains the replicas (each finishes its in-flight requests), then stops nginx.
#
#   deploy/run_replicas.sh -m MODEL.gguf [-n 3] [--port 8080] [-- extra `lockstep serve` flags]
#
# In the working directory (--dir, default a new /tmp/lockstep-replicas.*): nginx.conf, replicas.tsv (index,
# pid, port of each replica), urls.txt (their API roots, for `lockstep ask --url-file`), replica-I.log,
# access.log (which replica served each request), error.log. See docs/scale-out.md.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<EOF
usage: $0 -m MODEL [options] [-- extra lockstep serve flags]
  -m, --model FILE     GGUF model every replica serves (required)
  -n, --replicas N     number of replicas (default 3)
  --host ADDR          address nginx listens on (default 127.0.0.1)
  --port P             port nginx listens on (default 8080)
  --replica-port P     first replica port, then P+1, ... (default 0: each replica picks a free port)
  -t, --threads T      compute threads per replica (default 1)
  --no-affinity        ignore X-Affinity-Key: every request is balanced by least_conn
  --fail-timeout S     seconds nginx avoids a replica after it failed (default 5)
  --dir DIR            working directory (default: a new /tmp/lockstep-replicas.XXXXXX)
  --lockstep BIN       the lockstep binary (default: build/lockstep of this checkout)
  --nginx BIN          the nginx binary (default: nginx on PATH, else /usr/sbin/nginx)
EOF
}

die() {
  echo "run_replicas: $*" >&2
  exit 1
}

model="" replicas=3 host=127.0.0.1 port=8080 replica_port=0 threads=1 affinity=1 fail_timeout=5 dir=""
lockstep="$root/build/lockstep" nginx_bin="" serve_args=()
while (($#)); do
  case "$1" in
    -m | --model) model="${2:?}"; shift 2 ;;
    -n | --replicas) replicas="${2:?}"; shift 2 ;;
    --host) host="${2:?}"; shift 2 ;;
    --port) port="${2:?}"; shift 2 ;;
    --replica-port) replica_port="${2:?}"; shift 2 ;;
    -t | --threads) threads="${2:?}"; shift 2 ;;
    --no-affinity) affinity=0; shift ;;
    --fail-timeout) fail_timeout="${2:?}"; shift 2 ;;
    --dir) dir="${2:?}"; shift 2 ;;
    --lockstep) lockstep="${2:?}"; shift 2 ;;
    --nginx) nginx_bin="${2:?}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; serve_args=("$@"); break ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done

[[ -n $model ]] || { usage >&2; die "-m MODEL is required"; }
[[ -f $model ]] || die "model file '$model' does not exist"
[[ $replicas =~ ^[1-9][0-9]*$ ]] || die "--replicas must be a positive integer, got '$replicas'"
[[ $port =~ ^[0-9]+$ && $port -ge 1 && $port -le 65535 ]] || die "--port must be 1..65535, got '$port'"
[[ $replica_port =~ ^[0-9]+$ ]] || die "--replica-port must be a port number, got '$replica_port'"
[[ -x $lockstep ]] || die "lockstep binary '$lockstep' not found (scripts/build.sh builds it; or --lockstep BIN)"
if [[ -z $nginx_bin ]]; then nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"; fi
[[ -x $nginx_bin ]] || die "nginx not found at '$nginx_bin' (Debian: apt-get install nginx; scripts/install_deps.sh does)"
template="$root/deploy/nginx/lockstep.conf.template"
[[ -f $template ]] || die "missing $template"

if [[ -z $dir ]]; then dir="$(mktemp -d /tmp/lockstep-replicas.XXXXXX)"; fi
mkdir -p "$dir/tmp"
dir="$(cd "$dir" && pwd)"

pids=()
nginx_pid=""
stop_all() {
  trap - INT TERM EXIT
  # Replicas first (each drains: its in-flight requests finish through nginx), then nginx.
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ -n $nginx_pid ]]; then
    kill -QUIT "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
  fi
}
trap 'stop_all; exit 0' INT TERM
trap stop_all EXIT

for ((i = 0; i < replicas; i++)); do
  p=0
  if ((replica_port > 0)); then p=$((replica_port + i)); fi
  # The log exists before the wait below reads it: the background job's own redirection may open it later
  # (sed on a missing file, under set -e, ended this script silently).
  : >"$dir/replica-$i.log"
  "$lockstep" serve -m "$model" --host 127.0.0.1 --port "$p" -t "$threads" "${serve_args[@]}" \
    >"$dir/replica-$i.log" 2>&1 &
  pids+=("$!")
done

# Each replica prints "serving 'ID' on http://127.0.0.1:PORT ..." once its model is loaded.
ports=()
for ((i = 0; i < replicas; i++)); do
  found=""
  for ((tries = 0; tries < 600; tries++)); do
    found="$(sed -n 's/.*serving .* on http:\/\/127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$dir/replica-$i.log" | head -n 1)"
    [[ -n $found ]] && break
    kill -0 "${pids[$i]}" 2>/dev/null || { tail -n 20 "$dir/replica-$i.log" >&2; die "replica $i exited while starting"; }
    sleep 0.1
  done
  [[ -n $found ]] || { tail -n 20 "$dir/replica-$i.log" >&2; die "replica $i not ready after 60 s"; }
  ports+=("$found")
done

: >"$dir/replicas.tsv"
: >"$dir/urls.txt"
servers=""
for ((i = 0; i < replicas; i++)); do
  printf '%d\t%d\t%d\n' "$i" "${pids[$i]}" "${ports[$i]}" >>"$dir/replicas.tsv"
  echo "http://127.0.0.1:${ports[$i]}/v1" >>"$dir/urls.txt"
  servers+="    server 127.0.0.1:${ports[$i]} max_fails=1 fail_timeout=${fail_timeout}s;"$'\n'
done

conf="$(<"$template")"
user_line="# (not root: nginx runs as the current user)"
if [[ $(id -u) -eq 0 ]]; then user_line="user root;"; fi
keyed=lockstep_affinity
if ((affinity == 0)); then keyed=lockstep_least_conn; fi
conf="${conf//@USER_LINE@/$user_line}"
conf="${conf//@PREFIX@/$dir}"
conf="${conf//@SERVERS@/${servers%$'\n'}}"
conf="${conf//@KEYED_UPSTREAM@/$keyed}"
conf="${conf//@LISTEN@/$host:$port}"
conf="${conf//@TRIES@/$replicas}"
printf '%s\n' "$conf" >"$dir/nginx.conf"

nginx_args=(-p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log")
"$nginx_bin" -t -q "${nginx_args[@]}" || die "nginx rejected $dir/nginx.conf (see $dir/error.log)"
"$nginx_bin" "${nginx_args[@]}" -g 'daemon off;' &
nginx_pid=$!
for ((tries = 0; ; tries++)); do
  if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then break; fi
  kill -0 "$nginx_pid" 2>/dev/null || { tail -n 20 "$dir/error.log" >&2; die "nginx exited while starting"; }
  ((tries < 100)) || die "nginx not listening on $host:$port after 10 s"
  sleep 0.1
done

mode="X-Affinity-Key consistent hashing, else least_conn"
if ((affinity == 0)); then mode="least_conn"; fi
echo "lockstep replicas: ready at http://$host:$port/v1 ($replicas replicas; $mode)"
for ((i = 0; i < replicas; i++)); do
  echo "  replica $i: http://127.0.0.1:${ports[$i]}/v1 (pid ${pids[$i]}, log $dir/replica-$i.log)"
done
echo "  nginx: $dir/nginx.conf (pid $nginx_pid, access log $dir/access.log)"
echo "  try: $lockstep ask --url http://$host:$port -q 'Once upon a time'"

# Until nginx exits or we are told to stop. A replica that exits (or is stopped on purpose) is not restarted:
# nginx sends its requests to the others.
set +e
wait "$nginx_pid"
rc=$?
nginx_pid=""
echo "run_replicas: nginx exited ($rc); stopping the replicas" >&2
exit 1
