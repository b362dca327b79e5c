#!/usr/bin/env python3
"""Render a migration result (the JSON migrate.sh writes) for a projector.

    report.py RESULT.json [--html OUT.html] [--width COLUMNS] [--no-color]

Prints the text report on stdout; with --html also writes the same report as
one self-contained HTML page (inline CSS and SVG, no external resources):
a timeline of the migration phases and the queues before and after drawn as
pictures.  The verdict is sigledger's, as migrate.sh stored it (ledger.verdict):
exit status 0 when it is PASS, 1 when FAIL, 2 when the result lacks a field
it needs (named in the message).
"""
import argparse
import collections
import html
import json
import os
import sys

PHASES = ("freeze", "dump", "transfer", "restore", "commit")
PHASE_COLORS = {"freeze": "#4e79a7", "dump": "#f28e2b", "transfer": "#e15759",
                "restore": "#59a14f", "commit": "#b07aa1", "other": "#bab0ac"}
CLASS_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]
KEY_FIELDS = ("pid", "uid", "value", "timerid", "overrun", "status", "band",
              "fd", "addr", "syscall")


# ---------------------------------------------------------------- input model
#
# result.json is written by orchestrate/migrate.sh: the agents' replies as
# docs/openapi.yaml defines them (before, after: GET .../signals; migrate:
# POST .../migrate) and sigledger's JSON (ledger), whose verdict is the one
# verdict of the migration. Only documented fields are read; a missing one
# is an error naming it.

class ReportError(Exception):
    pass


def need(obj, path, where="result.json"):
    """obj's member at the dotted path; ReportError naming it if absent."""
    cur = obj
    for part in path.split("."):
        if isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        elif isinstance(cur, dict) and cur.get(part) is not None:
            cur = cur[part]
        else:
            raise ReportError("%s has no %s" % (where, path))
    return cur


def extract_queues(snapshot, which):
    """[(key, label, records)] for every thread's private queue, then the
    process-wide queue, of a GET /v1/workloads/{id}/signals reply; the
    keys are sigledger's queue names."""
    if snapshot is None:
        return []
    where = "result.json %s" % which
    queues = []
    for pos, thread in enumerate(need(snapshot, "threads", where)):
        index = need(thread, "index", "%s thread %d" % (where, pos))
        queues.append(("t%s" % index, "thread %s private" % index,
                       need(thread, "pending.signals", "%s thread %d" % (where, pos))))
    queues.append(("shared", "process-wide", need(snapshot, "shared.signals", where)))
    return queues


def moved(result):
    """The migrate call answered 2xx (else its reply is a problem)."""
    status = result.get("migrate_status")
    if status is None:
        raise ReportError("result.json has no migrate_status")
    return status.startswith("2")


def timings_of(result):
    """Phase durations in seconds, from the migrate reply's timings (ms)."""
    if not moved(result):
        return {}
    timings = need(result, "migrate.timings")
    return {phase: need(timings, phase + "_ms", "the migrate reply's timings") / 1e3
            for phase in PHASES + ("downtime",)}


def ledger_of(result):
    """sigledger's counts and verdict, and the per-host counts migrate.sh adds."""
    led = need(result, "ledger")
    if "error" in led:
        raise ReportError("no verdict: %s" % led["error"])
    out = {name: need(led, name, "sigledger's verdict") for name in
           ("sent", "delivered", "lost", "duplicated", "mismatched")}
    for name in ("delivered_a", "delivered_b", "migrated"):
        out[name] = need(result, "ledger_extra." + name)
    out["pass"] = need(led, "verdict.pass", "sigledger's verdict")
    out["reasons"] = need(led, "verdict.reasons", "sigledger's verdict")
    # Per queue: identical, timers (identical but for moved timer records
    # raised by their timer on B, or timer signals fired on B behind them),
    # truncated, different, missing; absent when not compared.
    out["queues"] = {q["queue"]: (q["result"], q["timers_added"], q["timers_raised"])
                     for q in led.get("queues", [])}
    return out


def code_class(rec):
    name = rec["code_name"]	# null when the code has no name
    if name:
        return name
    return "si_code %s" % rec["code"]


def key_fields(rec):
    parts = []
    for field in KEY_FIELDS:
        if field in rec:
            v = rec[field]
            if isinstance(v, int) and v > 0xffffffff:
                v = hex(v)
            parts.append("%s=%s" % (field, v))
    return " ".join(parts[:3])


def queue_result(ledger, key):
    """sigledger's comparison of one queue: (result, timer signals added, raised)."""
    return ledger["queues"].get(key, (None, 0, 0))


def restore_of(result):
    """The migrate reply's account of B's restore (None when nothing moved)."""
    if not moved(result):
        return None
    return need(result, "migrate.target_workload.restore")


# --------------------------------------------------------------- text report

def fmt_s(v):
    if v is None:
        return "n/a"
    if v < 1e-3:
        return "%.0f us" % (v * 1e6)
    if v < 1:
        return "%.1f ms" % (v * 1e3)
    return "%.2f s" % v


def fmt_n(v):
    return "n/a" if v is None else "{:,}".format(v)


class Text:
    def __init__(self, color, width):
        self.color = color
        self.width = width
        self.lines = []

    def c(self, code, s):
        return "\033[%sm%s\033[0m" % (code, s) if self.color else s

    def add(self, s=""):
        self.lines.append(s)

    def title(self, s):
        self.add()
        self.add(self.c("1;36", s))
        self.add(self.c("36", "-" * min(len(s), self.width)))


def timer_notes(added, raised):
    """What B's timers did to a queue that is otherwise identical."""
    notes = []
    if raised:
        notes.append("%d moved timer signal%s raised by %s timer on B"
                     % (raised, "s" if raised > 1 else "", "their" if raised > 1 else "its"))
    if added:
        notes.append("%d timer signal%s fired on B since" % (added, "s" if added > 1 else ""))
    return ", ".join(notes)


def queue_mark(t, ledger, key, exact, moved):
    """The queue's line end, from sigledger's comparison of it."""
    how, added, raised = queue_result(ledger, key)
    if not moved:
        return t.c("33", "stayed on A")
    if not exact:
        return t.c("33", "ran in between")
    if how == "identical":
        return t.c("32", "identical")
    if how == "timers":
        return t.c("32", "identical") + t.c("33", " + " + timer_notes(added, raised))
    return t.c("1;31", (how or "not compared").upper())


def queue_table(t, before, after, ledger, exact, restore):
    after_map = {k: recs for k, _, recs in after}
    t.add("  %-22s %12s %12s   %s" % ("queue", "before on A", "after on B" if exact else "on B later", "bytes"))
    for key, label, recs in before:
        other = after_map.get(key, [])
        t.add("  %-22s %12s %12s   %s" % (label, fmt_n(len(recs)), fmt_n(len(other)),
                                          queue_mark(t, ledger, key, exact, bool(after))))
    tb = sum(len(r) for _, _, r in before)
    ta = sum(len(r) for _, _, r in after)
    t.add("  %-22s %12s %12s" % ("total", fmt_n(tb), fmt_n(ta)))
    if restore:
        t.add("  %-22s %12s %12s   %s" % ("requeued on B", "", fmt_n(need(restore, "requeued")),
              t.c("32", "verified byte for byte before resuming") if need(restore, "verified")
              else t.c("1;31", "NOT verified")))


def signal_mix(recs):
    by_sig = collections.Counter((r["signal"], code_class(r)) for r in recs)
    mix = ", ".join("%s/%s x%s" % (s, c, fmt_n(n)) for (s, c), n in by_sig.most_common(3))
    if len(by_sig) > 3:
        mix += ", +%d kinds" % (len(by_sig) - 3)
    return mix


def describe(rec):
    return "%s %s %s" % (rec["signal"], code_class(rec), key_fields(rec))


def queue_samples(t, before, after, ledger):
    after_map = {k: recs for k, _, recs in after}
    for key, label, recs in before:
        other = after_map.get(key, [])
        if not recs and not other:
            continue
        t.add("  %-18s A: %s" % (label, signal_mix(recs) or "empty"))
        how, added, raised = queue_result(ledger, key)
        if how in ("identical", "timers"):
            t.add("  %-18s B: %s" % ("", t.c("32", "the same %s records, byte for byte" % fmt_n(len(recs)))
                                     + (t.c("33", " but for " + timer_notes(added, raised))
                                        if how == "timers" else "")))
        elif after:
            t.add("  %-18s B: %s" % ("", t.c("1;31" if how else "33", signal_mix(other) or "empty")))
        for side, rs in (("A", recs), ("B", other)):
            if rs and (side == "A" or how not in ("identical", "timers")):
                t.add("  %-18s    %s oldest: %s" % ("", side, describe(rs[0])))
                if len(rs) > 1:
                    t.add("  %-18s    %s newest: %s" % ("", side, describe(rs[-1])))


def class_counts(queues):
    counts = collections.Counter()
    for _, _, recs in queues:
        for rec in recs:
            counts[code_class(rec)] += 1
    return counts


def render_text(result, before, after, timings, ledger, color, width):
    t = Text(color, width)
    src, dst = need(result, "from"), need(result, "to")
    t.add(t.c("1", "sigmig: moving a signal-heavy process from %s to %s" %
               (need(src, "label"), need(dst, "label"))))
    wa, wb = need(result, "workload_a"), need(result, "workload_b")
    t.add("  workload %s, %s threads: pid %s on %s (%s)  ->  pid %s on %s (%s)" % (
        need(wa, "program"), need(result, "threads"),
        need(wa, "pid"), src["label"], need(src, "kernel"),
        wb["pid"] if "pid" in wb and wb["pid"] else "-", dst["label"], need(dst, "kernel")))
    rollback = need(result, "expect") == "rollback"
    if rollback:
        t.add(t.c("33", "  expected outcome: rollback (fault injected: %s)" % need(result, "fault")))

    t.title("Pending signals, per queue (before on A, after on B)")
    exact = need(result, "exact_snapshot") is True
    if after and not exact:
        t.add(t.c("33", "  note: the copy on B resumed before it could be looked at; 'after' is what it has not"))
        t.add(t.c("33", "  consumed yet. B's runtime re-read every requeued queue and compared it byte for byte."))
    restore = restore_of(result)
    queue_table(t, before, after, ledger, exact, restore)

    t.title("What is pending (signal / si_code, oldest and newest record)")
    queue_samples(t, before, after, ledger)

    t.title("Counts by si_code class")
    cb, ca = class_counts(before), class_counts(after)
    for name in sorted(set(cb) | set(ca), key=lambda n: -cb.get(n, 0)):
        t.add("  %-14s %10s on A  %10s on B" % (name, fmt_n(cb.get(name, 0)), fmt_n(ca.get(name, 0))))

    if timings:
        t.title("Timings")
        t.add("  " + "  |  ".join("%s %s" % (p, fmt_s(timings[p])) for p in PHASES))
        t.add("  %s: %s" % (downtime_label(result), t.c("1", fmt_s(timings["downtime"]))))
        t.add("  image: %s bytes, %s signals" % (fmt_n(need(result, "migrate.image_bytes")),
                                                fmt_n(need(result, "migrate.signals"))))
        migrate = result.get("migrate") or {}
        if "carried_at_commit" in migrate:
            window = (migrate.get("commit") or {}).get("exit_window") or {}
            forward = migrate.get("forward") or {}
            t.add("  carried at commit: %s signals that reached A after the dump, requeued on B"
                  " before it resumed" % fmt_n(migrate["carried_at_commit"]))
            if forward.get("lease_ms"):
                t.add("  forwarded after the cutover: %s signals in %s batches during a %s ms lease"
                      " (%s merged into pending ones on B); spooled %s, replayed %s" % (
                          fmt_n(forward.get("forwarded", 0)), fmt_n(forward.get("batches", 0)),
                          fmt_n(forward["lease_ms"]), fmt_n(forward.get("merged", 0)),
                          fmt_n(forward.get("spooled", 0)),
                          fmt_n((result.get("ledger_extra") or {}).get("replayed", 0))))
            who = "forwarder" if forward.get("lease_ms") else "original"
            ms = "%.1f" % window["ms"] if "ms" in window else "?"
            if window.get("sealed"):
                t.add("  exit window of the %s: %s ms from its last read of the queues to its"
                      " reaping, sealed before that read: sends in it failed with ESRCH,"
                      " none was accepted and lost" % (who, ms))
            else:
                t.add("  exit window of the %s: %s ms from its last read of the queues to its"
                      " reaping, not sealed (no SFD_IOC_SEAL): %s sends landed in it" % (
                          who, ms, fmt_n((result.get("ledger") or {}).get("exit_window", 0))))
        esrch = (result.get("ledger_extra") or {}).get("live_esrch")
        if esrch:
            t.add("  after the move: %s sends to the original's pid failed with ESRCH"
                  " (the senders learned that nothing was delivered)" % fmt_n(esrch))
        t.add("  B requeued %s signals and re-read every queue: %s" % (
            fmt_n(need(restore, "requeued")),
            t.c("32", "verified byte for byte") if need(restore, "verified") else t.c("1;31", "NOT verified")))

    t.title("Ledger (every signal sent, accounted for on both hosts)")
    t.add("  sent %s | delivered on A %s | migrated %s | delivered on B %s" % (
        fmt_n(ledger["sent"]), fmt_n(ledger["delivered_a"]),
        fmt_n(ledger["migrated"]), fmt_n(ledger["delivered_b"])))
    bad = lambda k: t.c("1;31" if ledger[k] else "32", fmt_n(ledger[k]))
    t.add("  lost %s | duplicated %s | mismatched %s" % (bad("lost"), bad("duplicated"), bad("mismatched")))
    t.add()
    if ledger["pass"] and rollback:
        t.add(t.c("1;42;30", "  PASS  ") + "  the move failed safely: the original kept every signal, nothing lost or duplicated")
    elif ledger["pass"]:
        t.add(t.c("1;42;30", "  PASS  ") + "  every pending signal arrived on B exactly once, byte for byte")
    else:
        t.add(t.c("1;41;37", "  FAIL  ") + "  " + "; ".join(ledger["reasons"]))
    return "\n".join(t.lines)


# --------------------------------------------------------------- HTML report

def downtime_label(result):
    """A copy held for the snapshot resumed later, when it was thawed."""
    if need(result, "held_on_b") is True:
        return ("downtime, freeze to the copy ready on B (then held %ss frozen for this snapshot)"
                % need(result, "held_seconds"))
    return "total downtime (freeze to resume)"


def svg_timeline(timings, width=900, end_label="resume on B"):
    if not timings:
        return "<p>nothing moved: no timings</p>"
    total = timings["downtime"] or sum(timings[p] for p in PHASES)
    if not total:
        return "<p>no timings</p>"
    parts = [(p, timings[p]) for p in PHASES]
    other = max(total - sum(v for _, v in parts), 0)
    if other > total * 0.005:
        parts.append(("other", other))
    scale = (width - 20) / max(total, sum(v for _, v in parts))
    x = 10
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="110" role="img" '
           'aria-label="migration timeline">' % width]
    for name, v in parts:
        w = v * scale
        out.append('<rect x="%.1f" y="20" width="%.1f" height="40" fill="%s"><title>%s %s</title></rect>'
                   % (x, max(w, 1), PHASE_COLORS[name], name, fmt_s(v)))
        if w > 60:
            out.append('<text x="%.1f" y="45" fill="#fff" font-size="14" text-anchor="middle">%s</text>'
                       % (x + w / 2, name))
        out.append('<text x="%.1f" y="78" font-size="12" text-anchor="start">%s</text>' % (x + 2, fmt_s(v)) if w > 45 else "")
        x += w
    out.append('<text x="10" y="14" font-size="12">freeze</text>')
    out.append('<text x="%d" y="14" font-size="12" text-anchor="end">%s: %s downtime</text>'
               % (width - 10, end_label, fmt_s(total)))
    out.append('<line x1="10" y1="95" x2="%d" y2="95" stroke="#333"/>' % (width - 10))
    out.append("</svg>")
    return "".join(out)


def class_palette(*queue_sets):
    names = []
    for queues in queue_sets:
        for name, _ in class_counts(queues).most_common():
            if name not in names:
                names.append(name)
    return {n: CLASS_COLORS[i % len(CLASS_COLORS)] for i, n in enumerate(names)}


def svg_queue(records, palette, cols=64, cell=6, max_cells=2048):
    """One square per pending signal, oldest first, colored by si_code class;
    large queues are drawn as max_cells squares each standing for several."""
    n = len(records)
    per = max(1, -(-n // max_cells))
    cells = [records[i] for i in range(0, n, per)]
    rows = max(1, -(-len(cells) // cols))
    w, h = cols * cell + 2, rows * cell + 2
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">' % (w, h)]
    for i, rec in enumerate(cells):
        x, y = 1 + (i % cols) * cell, 1 + (i // cols) * cell
        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s %s %s</title></rect>'
                   % (x, y, cell - 1, cell - 1, palette.get(code_class(rec), "#999"),
                      html.escape(str(rec["signal"])), html.escape(code_class(rec)),
                      html.escape(key_fields(rec))))
    out.append("</svg>")
    note = "" if per == 1 else " (one square = %d signals)" % per
    return "".join(out), note


def render_html(result, before, after, timings, ledger, text):
    palette = class_palette(before, after)
    after_map = {k: (label, recs) for k, label, recs in after}
    exact = need(result, "exact_snapshot") is True
    rows = []
    for key, label, recs in before:
        other = after_map.get(key, (label, []))[1]
        sa, na = svg_queue(recs, palette)
        sb, nb = svg_queue(other, palette)
        how, added, raised = queue_result(ledger, key)
        if not after:
            mark = "stayed on A"
        elif not exact:
            mark = "ran in between"
        else:
            mark = {"identical": '<span class="ok">identical</span>',
                    "timers": '<span class="ok">identical</span> + %s' % html.escape(timer_notes(added, raised)),
                    }.get(how, '<span class="bad">%s</span>' % html.escape(how or "not compared"))
        rows.append("<tr><th>%s<br><small>%d &rarr; %d<br>%s</small></th><td>%s<small>%s</small></td>"
                    "<td>%s<small>%s</small></td></tr>" % (
                        html.escape(label), len(recs), len(other),
                        mark,
                        sa, na, sb, nb))
    legend = " ".join('<span class="sw" style="background:%s"></span>%s' % (c, html.escape(n))
                      for n, c in palette.items())
    led_cells = "".join("<td class='%s'>%s<br><small>%s</small></td>" % (
        "bad" if k in ("lost", "duplicated", "mismatched") and ledger[k] else "",
        fmt_n(ledger[k]), label) for k, label in (
        ("sent", "sent"), ("delivered_a", "delivered on A"), ("migrated", "migrated"),
        ("delivered_b", "delivered on B"), ("lost", "lost"), ("duplicated", "duplicated"),
        ("mismatched", "mismatched")))
    verdict_html = ('<div class="verdict pass">PASS: every pending signal arrived exactly once, byte for byte</div>'
                    if ledger["pass"] else '<div class="verdict fail">FAIL: %s</div>'
                    % html.escape("; ".join(ledger["reasons"])))
    src, dst = need(result, "from"), need(result, "to")
    held = need(result, "held_on_b") is True
    return """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>sigmig migration report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1500px}
h1{font-size:2em;margin-bottom:0} h2{margin-top:1.5em;border-bottom:2px solid #ddd}
table{border-collapse:collapse} td,th{padding:.4em .8em;vertical-align:top;text-align:left}
.queues th{width:11em} .ledger td{text-align:center;font-size:1.6em;border:1px solid #ddd}
.ledger small{font-size:.5em;color:#555} .ok{color:#2a7d2a} .bad{color:#c00;font-weight:bold}
.verdict{font-size:1.8em;padding:.5em;margin:1em 0;color:#fff}
.pass{background:#2a7d2a} .fail{background:#c00}
.sw{display:inline-block;width:1em;height:1em;margin:0 .3em 0 1em;vertical-align:middle}
pre{background:#f5f5f5;padding:1em;font-size:.8em;overflow:auto}
</style></head><body>
<h1>sigmig: %(program)s moved from %(src)s to %(dst)s</h1>
<p>%(threads)s threads, %(pending)s pending signals; kernels: A %(ka)s, B %(kb)s</p>
%(verdict)s
<h2>Downtime: %(downtime)s %(downtime_span)s</h2>
%(timeline)s
<h2>Pending queues before (on A) and after (on B)</h2>
<p>one square per pending signal, oldest first, colored by si_code: %(legend)s</p>
<table class="queues"><tr><th></th><th>before, on A</th><th>%(after_title)s</th></tr>%(rows)s</table>
<h2>Ledger</h2>
<table class="ledger"><tr>%(ledger)s</tr></table>
<h2>Full text report</h2>
<pre>%(text)s</pre>
</body></html>
""" % {
        "program": html.escape(str(need(result, "workload_a.program"))),
        "src": html.escape(need(src, "label")), "dst": html.escape(need(dst, "label")),
        "threads": html.escape(str(need(result, "threads"))),
        "pending": fmt_n(sum(len(r) for _, _, r in before)),
        "ka": html.escape(str(need(src, "kernel"))), "kb": html.escape(str(need(dst, "kernel"))),
        "verdict": verdict_html, "downtime": fmt_s(timings.get("downtime")),
        "downtime_span": html.escape("from freeze to the copy ready on B (held %ss more for the snapshot)"
                                     % need(result, "held_seconds") if held else "from freeze to resume"),
        "timeline": svg_timeline(timings, end_label="ready on B" if held else "resume on B"),
        "legend": legend, "rows": "".join(rows),
        "ledger": led_cells, "text": html.escape(text),
        "after_title": ("the original, still on A" if not after else "after, on B" if exact else
                        "on B, moments later (it resumed at once; B verified the requeued queues itself)"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result")
    ap.add_argument("--html")
    ap.add_argument("--width", type=int, default=100)
    ap.add_argument("--no-color", action="store_true")
    args = ap.parse_args()
    try:
        with open(args.result) as f:
            result = json.load(f)
        before = extract_queues(need(result, "before"), "before")
        if "after" not in result:
            raise ReportError("result.json has no after (null when nothing moved)")
        after = extract_queues(result["after"], "after")
        timings = timings_of(result)
        ledger = ledger_of(result)
        color = not args.no_color and sys.stdout.isatty() and os.environ.get("NO_COLOR") is None
        text = render_text(result, before, after, timings, ledger, color, args.width)
        page = None
        if args.html:
            plain = render_text(result, before, after, timings, ledger, False, args.width)
            page = render_html(result, before, after, timings, ledger, plain)
    except (OSError, ValueError, ReportError) as e:
        print("report: %s: %s" % (args.result, e), file=sys.stderr)
        return 2
    print(text)
    if page is not None:
        tmp = args.html + ".tmp"
        with open(tmp, "w") as f:
            f.write(page)
        os.replace(tmp, args.html)
        print("\nHTML report: %s" % args.html)
    return 0 if ledger["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
