#!/bin/bash
# The unprivileged condition of a container (SPEC §15), for the tests: runs "$@" in a new user
# namespace whose uid/gid maps this (root) parent writes, with max_user_namespaces set to 0
# inside it, as uid 1000 without capabilities. Forwards SIGTERM and exits with the child's status.
set -euo pipefail
sync=$(mktemp -d)
chmod 755 "$sync"
mkfifo -m 666 "$sync/go"
# The first shell runs unmapped (its exec came before the maps) and so without capabilities; once
# mapped to root it execs a second one, which gets the namespace's capabilities back.
unshare --user -- bash -c '
  read -r _ < "$0/go"
  exec bash -c "echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --reuid=1000 --regid=1000 --clear-groups --inh-caps=-all --bounding-set=-all -- \"\$@\"" inner "$@"
' "$sync" "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null || true' TERM INT
own=$(readlink /proc/self/ns/user)
for _ in $(seq 1 1000); do
  [ "$(readlink "/proc/$child/ns/user" 2>/dev/null || echo "$own")" != "$own" ] && break
  sleep 0.01
done
# A map is written once, in one write(2): cat copies the file in one read and one write.
printf '0 0 1\n1000 1000 1\n' > "$sync/map"
cat "$sync/map" > "/proc/$child/uid_map"
cat "$sync/map" > "/proc/$child/gid_map"
echo go > "$sync/go"
rm -rf "$sync"
status=0
while kill -0 "$child" 2>/dev/null; do wait "$child" || status=$?; done
exit "$status"
