#!/usr/bin/env bash
# Regenerates old.db and old.nq, the fixture of cmd/mql/migrate_test.go, with the mql of commit
# 05cc83f (the last before the storage rewrite), built in a temporary worktree: story.mql, two
# tokens (one revoked), the export that mql writes (old.nq, the golden export), and the file,
# compacted as `bbolt compact` does (bbolt.Compact) to keep it small. The compacted file must
# export the same bytes with that mql: checked at the end, on a copy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$repo" worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$repo" worktree add --detach "$work/old" 05cc83f >/dev/null 2>&1
(cd "$work/old" && go build -o "$work/mql-old" ./cmd/mql)
mkdir "$work/old/cmd/compact"
cat > "$work/old/cmd/compact/main.go" <<'GO'
package main

import (
	"os"

	bolt "go.etcd.io/bbolt"
)

func main() {
	src, err := bolt.Open(os.Args[1], 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		panic(err)
	}
	dst, err := bolt.Open(os.Args[2], 0o600, nil)
	if err != nil {
		panic(err)
	}
	if err := bolt.Compact(dst, src, 1<<20); err != nil {
		panic(err)
	}
	if err := dst.Close(); err != nil {
		panic(err)
	}
	src.Close()
}
GO
old="$work/mql-old"
db="$work/story.db"
export MQL_TEST_CLOCK=2026-11-29T10:00:00Z
"$old" -f "$here/story.mql" "$db" >/dev/null
"$old" token create worker-3 "$db" >/dev/null
"$old" token create orchestrator --expires 720h "$db" >/dev/null
"$old" token revoke t35.1 "$db" >/dev/null
"$old" check "$db"
"$old" export "$db" > "$here/old.nq"
rm -f "$here/old.db"
(cd "$work/old" && go run ./cmd/compact "$db" "$here/old.db")
chmod 0644 "$here/old.db"
cp "$here/old.db" "$work/copy.db"
"$old" export "$work/copy.db" | cmp - "$here/old.nq"
ls -l "$here/old.db" "$here/old.nq"
