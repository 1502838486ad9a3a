#!/usr/bin/env bash
# Starts the brokers the integration tests talk to, on loopback:
#   RabbitMQ 5672 with the management API on 15672 (guest/guest),
#   local-aws-sqs (an SQS emulator) on $ASYA_SQS_PORT, default 9324,
#   pstest (a Pub/Sub emulator, internal/pubsubemulator) on
#   $ASYA_PUBSUB_PORT, default 8085.
# Installs redis-server, which the state connector's tests (e2e/connector)
# start themselves, one per test on a free port, and what `make test`
# itself needs beside Go: gcc (the race detector links with cgo) and
# python3 (the runtime's tests).
# Idempotent: anything already listening is left alone, and nothing is
# installed twice. Works on a fresh Debian machine (as root or with sudo).
# The brokers keep running afterwards, for the next run;
#   .ci/services.sh stop
# stops what this script started.
set -euo pipefail
cd "$(dirname "$0")/.."

SQS_PORT=${ASYA_SQS_PORT:-9324}
SQS_VERSION=2.0.2
SQS_DIR=.cache/local-aws-sqs
PUBSUB_PORT=${ASYA_PUBSUB_PORT:-8085}
PUBSUB_DIR=.cache/pubsub-emulator
WAIT_SECONDS=90

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
export PATH="$PATH:/usr/sbin:/sbin"

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for_port() { # port name
  local deadline=$((SECONDS + WAIT_SECONDS))
  until listening "$1"; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "$2 is not listening on 127.0.0.1:$1 after ${WAIT_SECONDS}s" >&2
      return 1
    fi
    sleep 1
  done
}

apt_updated=""
apt_install() { # packages...
  if [ -z "$apt_updated" ]; then
    $SUDO apt-get update -qq
    apt_updated=1
  fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

start_rabbitmq() {
  if ! listening 5672; then
    command -v rabbitmq-server >/dev/null || apt_install rabbitmq-server
    # The init script works with and without systemd; a bare container may
    # have neither, so fall back to starting the node directly.
    $SUDO service rabbitmq-server start >/dev/null 2>&1 || $SUDO rabbitmq-server -detached
    wait_for_port 5672 RabbitMQ
  fi
  if ! listening 15672; then
    $SUDO rabbitmq-plugins enable --quiet rabbitmq_management >/dev/null
    wait_for_port 15672 "RabbitMQ management"
  fi
  echo "RabbitMQ:      amqp://guest:guest@127.0.0.1:5672/ (management http://127.0.0.1:15672)"
}

start_sqs() {
  if ! listening "$SQS_PORT"; then
    command -v npm >/dev/null || apt_install nodejs npm
    if [ ! -d "$SQS_DIR/node_modules/local-aws-sqs" ]; then
      mkdir -p "$SQS_DIR"
      npm install --prefix "$SQS_DIR" --no-audit --no-fund --loglevel=error "local-aws-sqs@$SQS_VERSION"
    fi
    # local-aws-sqs is a library without a command line: start its server
    # from a one-line script. It emulates the 60 s wait after DeleteQueue.
    SQS_PORT=$SQS_PORT setsid nohup node -e '
      const { createSqsServer } = require(process.argv[1]);
      createSqsServer({ port: Number(process.env.SQS_PORT), hostname: "127.0.0.1",
                        region: "us-east-1", accountId: "000000000000" });
    ' "$PWD/$SQS_DIR/node_modules/local-aws-sqs" >"$SQS_DIR/server.log" 2>&1 </dev/null &
    echo $! >"$SQS_DIR/server.pid"
    wait_for_port "$SQS_PORT" local-aws-sqs
  fi
  local pid="?"
  [ -f "$SQS_DIR/server.pid" ] && pid=$(cat "$SQS_DIR/server.pid")
  echo "local-aws-sqs: http://127.0.0.1:$SQS_PORT (pid $pid, log $SQS_DIR/server.log)"
}

start_pubsub() {
  if ! listening "$PUBSUB_PORT"; then
    mkdir -p "$PUBSUB_DIR"
    # Built from this module (pstest, at the version go.mod pins): the Go
    # build cache makes a second build instant.
    go build -o "$PUBSUB_DIR/pubsub-emulator" ./internal/pubsubemulator
    setsid nohup "$PUBSUB_DIR/pubsub-emulator" -address "127.0.0.1:$PUBSUB_PORT" \
      >"$PUBSUB_DIR/server.log" 2>&1 </dev/null &
    echo $! >"$PUBSUB_DIR/server.pid"
    wait_for_port "$PUBSUB_PORT" "the Pub/Sub emulator"
  fi
  local pid="?"
  [ -f "$PUBSUB_DIR/server.pid" ] && pid=$(cat "$PUBSUB_DIR/server.pid")
  echo "Pub/Sub:       127.0.0.1:$PUBSUB_PORT (pstest, pid $pid, log $PUBSUB_DIR/server.log)"
}

install_redis() {
  command -v redis-server >/dev/null || apt_install redis-server
  echo "redis-server:  $(command -v redis-server) (started by the tests that need it)"
}

install_build_tools() {
  local need=()
  command -v gcc >/dev/null || need+=(gcc libc6-dev)
  command -v python3 >/dev/null || need+=(python3)
  [ ${#need[@]} = 0 ] || apt_install "${need[@]}"
}

# stop_pid NAME PIDFILE stops a process this script started.
stop_pid() {
  if [ -f "$2" ] && kill "$(cat "$2")" 2>/dev/null; then
    echo "stopped $1"
  fi
  rm -f "$2"
}

stop_all() {
  stop_pid local-aws-sqs "$SQS_DIR/server.pid"
  stop_pid "the Pub/Sub emulator" "$PUBSUB_DIR/server.pid"
  if listening 5672; then
    $SUDO service rabbitmq-server stop >/dev/null 2>&1 || $SUDO rabbitmqctl stop >/dev/null
    echo "stopped RabbitMQ"
  fi
}

case "${1:-start}" in
  start)
    install_build_tools
    start_rabbitmq
    start_sqs
    start_pubsub
    install_redis
    ;;
  stop) stop_all ;;
  *) echo "usage: .ci/services.sh [start|stop]" >&2; exit 2 ;;
esac
