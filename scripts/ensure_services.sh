#!/usr/bin/env bash
# Start PostgreSQL, Redis and RabbitMQ if they are installed here and not answering. Never fails the build by itself:
# tests that need a server skip with a clear reason when it is unreachable.
set -u
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if ! up 5432 && command -v pg_ctlcluster >/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if ! up 6379 && command -v redis-server >/dev/null; then
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
if ! up 5672 && command -v rabbitmq-server >/dev/null; then
  rabbitmq-server -detached || true
fi
for i in $(seq 1 30); do up 5432 && up 6379 && break; sleep 1; done
for s in 5432:PostgreSQL 6379:Redis 5672:RabbitMQ; do
  if up "${s%%:*}"; then echo "${s#*:} is up"; else echo "${s#*:} is NOT reachable (its tests will skip)"; fi
done
