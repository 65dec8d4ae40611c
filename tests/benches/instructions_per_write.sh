#!/usr/bin/env bash
# Counts the instructions one `fleetd` runs per write in a one-client row of the write
# bench, under valgrind's callgrind (which counts instructions, not time, so two builds
# compare within a fraction of a percent on any host, loaded or not).
#
#   tests/benches/instructions_per_write.sh [NODE] [WRITES] [TRANSPORT] [FLEETD]
#
# NODE: beast (the leader: the bench bootstraps the cluster there) or 5070 / mac (a
# follower); WRITES: the row's length (default 3000); TRANSPORT: quic (default) or grpc;
# FLEETD: the binary to run (default: this checkout's release build). Needs the release
# build and the bench binary: `cargo build --release --bins && cargo bench --bench
# write_latency --no-run`. The node runs some fifty times slower under callgrind, and
# the row with it. Its counters are dumped every 2 s; the dumps taken while the row ran
# at full pace are summed and divided by the entries the node applied in them.
set -euo pipefail
NODE=${1:-beast} WRITES=${2:-3000} TRANSPORT=${3:-quic}
TARGET=${CARGO_TARGET_DIR:-$HOME/.cache/fleet-target}
FLEETD=${4:-$TARGET/release/fleetd}
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH=$(ls -t "$TARGET"/release/deps/write_latency-* | grep -v '\.d$' | head -1)
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }

# The bench starts `fleetd` from beside its own binary: a shadow target directory
# whose `fleetd` runs NODE under callgrind and the others as they are.
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/release/deps" "$WORK/out"
cp "$BENCH" "$WORK/release/deps/write_latency"
ln -s "$TARGET/release/fleetctl" "$WORK/release/fleetctl"
cat > "$WORK/release/fleetd" <<WRAPPER
#!/bin/sh
case "\$*" in
  *"/$NODE/fleetd.toml"*) exec valgrind --tool=callgrind --dump-instr=no \
      --callgrind-out-file="$WORK/out/callgrind.%p" "$FLEETD" "\$@" ;;
esac
exec "$FLEETD" "\$@"
WRAPPER
chmod +x "$WORK/release/fleetd"

cd "$HERE/.."
FLEET_BENCH_SYSTEMS=$TRANSPORT FLEET_BENCH_CLIENTS=1 FLEET_BENCH_WRITES=$WRITES \
  FLEET_BENCH_WRITES_PER_CLIENT=1 "$WORK/release/deps/write_latency" --bench \
  > "$WORK/bench.log" 2>&1 &
bench=$!
while kill -0 "$bench" 2>/dev/null; do
  sleep 2
  for dump in "$WORK"/out/callgrind.*; do
    pid=${dump##*.}
    [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && callgrind_control -d "$pid" >/dev/null 2>&1 || true
  done
done
wait "$bench" || { cat "$WORK/bench.log" >&2; exit 1; }
grep '^| 1 | fleet' "$WORK/bench.log" | tail -1
python3 "$HERE/instructions_per_write.py" "$WORK"/out/callgrind.*.*
