# Sourced by the GPU benchmark scripts: bubblewrap from KBV_BWRAP, else `bwrap` on PATH, else the Debian packages in
# .debs/ unpacked into a folder of their own (not into /), readable by the evaluations' own users. Without it the
# evaluations fall back to the uid sandbox, and the records' `sandbox` says so.
if [ -z "${KBV_BWRAP:-}" ] && ! command -v bwrap >/dev/null 2>&1 && compgen -G ".debs/*.deb" >/dev/null; then
    BW=$(mktemp -d /tmp/kbv-bwrap.XXXXXX)
    for f in .debs/*.deb; do dpkg -x "$f" "$BW"; done
    chmod -R o+rX "$BW"
    export KBV_BWRAP="$BW/usr/bin/bwrap"
fi
python3 -m evaluator.harness.sandbox.privileges --open >/dev/null 2>&1 || true
