#!/usr/bin/env python3
"""Render a migration result (the JSON migrate.sh writes) for a projector.

    report.py RESULT.json [--html OUT.html] [--width COLUMNS] [--no-color]

Prints the text report on stdout; with --html also writes the same report as
one self-contained HTML page (inline CSS and SVG, no external resources):
a timeline of the migration phases and the queues before and after drawn as
pictures.  Exit status 0 when the verdict is PASS, 1 when FAIL, 2 on bad input.
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

def records_of(queue):
    """A queue may be a list of records or an object holding one."""
    if isinstance(queue, list):
        return queue
    if isinstance(queue, dict):
        for key in ("signals", "pending", "records", "entries", "queue"):
            if isinstance(queue.get(key), list):
                return queue[key]
    return []


def thread_label(thread, position):
    index = thread.get("index", position)
    return index, "thread %s" % index


def extract_queues(snapshot):
    """[(key, label, records)] for every thread's private queue, then the
    process-wide queue, from a GET /v1/workloads/{id}/signals reply."""
    if not isinstance(snapshot, dict):
        return []
    queues = []
    threads = snapshot.get("threads") or []
    for pos, thread in enumerate(threads):
        index, label = thread_label(thread, pos)
        private = None
        for key in ("private", "pending", "signals", "queue", "records"):
            if key in thread:
                private = thread[key]
                break
        queues.append(("t%s" % index, label + " private", records_of(private)))
    shared = None
    for key in ("shared", "process", "group", "process_wide"):
        if key in snapshot:
            shared = snapshot[key]
            break
    queues.append(("shared", "process-wide", records_of(shared)))
    return queues


def first_number(obj, *names):
    for name in names:
        if isinstance(obj, dict) and isinstance(obj.get(name), (int, float)):
            return obj[name]
    return None


def seconds_of(obj, phase):
    """Phase duration in seconds from *_ns, *_us, *_ms or *_s fields."""
    if not isinstance(obj, dict):
        return None
    for suffix, scale in (("_ns", 1e-9), ("_us", 1e-6), ("_ms", 1e-3), ("_s", 1.0)):
        v = obj.get(phase + suffix)
        if isinstance(v, (int, float)):
            return v * scale
    return None


def timings_of(result):
    reply = result.get("migrate") or {}
    sources = [reply.get("timings"), reply.get("timing"), reply]
    out = {}
    for phase in PHASES + ("downtime", "total"):
        for src in sources:
            v = seconds_of(src, phase)
            if v is None and phase == "downtime":
                v = seconds_of(src, "total_downtime")
            if v is not None:
                out[phase] = v
                break
    if "downtime" not in out and "total" in out:
        out["downtime"] = out["total"]
    return out


def ledger_of(result):
    led = result.get("ledger") or {}
    summary = led.get("summary") if isinstance(led.get("summary"), dict) else led
    out = {}
    for name, keys in (("sent", ("sent",)),
                       ("delivered_a", ("delivered_a", "delivered_on_a")),
                       ("migrated", ("migrated",)),
                       ("delivered_b", ("delivered_b", "delivered_on_b")),
                       ("delivered", ("delivered",)),
                       ("lost", ("lost",)),
                       ("duplicated", ("duplicated", "duplicates")),
                       ("mismatched", ("mismatched", "mismatches"))):
        out[name] = first_number(summary, *keys)
    hosts = led.get("hosts") or led.get("by_host") or {}
    if isinstance(hosts, dict):
        for host, key in (("a", "delivered_a"), ("b", "delivered_b")):
            h = hosts.get(host) or hosts.get(host.upper())
            if out[key] is None and isinstance(h, dict):
                out[key] = first_number(h, "delivered")
    for key, src in (("delivered_a", "delivered_a"), ("delivered_b", "delivered_b"),
                     ("migrated", "migrated")):
        extra = (result.get("ledger_extra") or {}).get(src)
        if out[key] is None and isinstance(extra, (int, float)):
            out[key] = extra
    return out


def code_class(rec):
    name = rec.get("code_name")
    if name:
        return name
    return "si_code %s" % rec.get("code", "?")


def key_fields(rec):
    parts = []
    for field in KEY_FIELDS:
        if field in rec:
            v = rec[field]
            if isinstance(v, int) and v > 0xffffffff:
                v = hex(v)
            parts.append("%s=%s" % (field, v))
    return " ".join(parts[:3])


def compare_queue(before_recs, after_recs):
    """("identical"|"timers"|"different", records added on B).

    A held copy's timers are re-armed by the restore, so signals of those
    timers may be queued behind the moved records before its queues are
    read: the moved records must still be the head, byte for byte.
    """
    want, got = raw_list(before_recs), raw_list(after_recs)
    if got == want:
        return "identical", 0
    extra = after_recs[len(want):]
    if got[:len(want)] == want and all(code_class(r) == "SI_TIMER" for r in extra):
        return "timers", len(extra)
    return "different", 0


def raw_list(records):
    return [r.get("raw") for r in records]


# ------------------------------------------------------------------- verdict

def verdict(result, before, after, ledger):
    reasons = []
    for name in ("lost", "duplicated", "mismatched"):
        v = ledger.get(name)
        if v is None:
            reasons.append("ledger has no '%s' count" % name)
        elif v != 0:
            reasons.append("%s = %s" % (name, v))
    if result.get("expect") == "rollback":
        return not reasons, reasons
    after_map = {k: recs for k, _, recs in after}
    if result.get("exact_snapshot", True):
        for key, label, recs in before:
            if compare_queue(recs, after_map.get(key, []))[0] == "different":
                reasons.append("%s differs after the move" % label)
    restore = ((result.get("migrate") or {}).get("target_workload") or {}).get("restore") or {}
    if restore and not restore.get("verified"):
        reasons.append("B did not verify the requeued queues")
    if sum(len(r) for _, _, r in before) == 0:
        reasons.append("nothing was pending before the move")
    for extra in result.get("failures") or []:
        reasons.append(str(extra))
    return not reasons, reasons


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


def queue_table(t, before, after, exact=True, restore=None):
    after_map = {k: recs for k, _, recs in after}
    t.add("  %-22s %12s %12s   %s" % ("queue", "before on A", "after on B" if exact else "on B later", "bytes"))
    for key, label, recs in before:
        other = after_map.get(key, [])
        how, added = compare_queue(recs, other)
        if how == "identical":
            mark = t.c("32", "identical")
        elif how == "timers" and exact:
            mark = t.c("32", "identical") + t.c("33", " + %d timer signal%s fired on B since"
                                                % (added, "s" if added > 1 else ""))
        elif exact:
            mark = t.c("1;31", "DIFFERENT")
        else:
            mark = t.c("33", "ran in between")
        t.add("  %-22s %12s %12s   %s" % (label, fmt_n(len(recs)), fmt_n(len(other)), mark))
    tb = sum(len(r) for _, _, r in before)
    ta = sum(len(r) for _, _, r in after)
    t.add("  %-22s %12s %12s" % ("total", fmt_n(tb), fmt_n(ta)))
    if restore:
        t.add("  %-22s %12s %12s   %s" % ("requeued on B", "", fmt_n(restore.get("requeued")),
              t.c("32", "verified byte for byte before resuming") if restore.get("verified")
              else t.c("1;31", "NOT verified")))


def signal_mix(recs):
    by_sig = collections.Counter((r.get("signal", "?"), code_class(r)) for r in recs)
    mix = ", ".join("%s/%s x%s" % (s, c, fmt_n(n)) for (s, c), n in by_sig.most_common(3))
    if len(by_sig) > 3:
        mix += ", +%d kinds" % (len(by_sig) - 3)
    return mix


def describe(rec):
    return "%s %s %s" % (rec.get("signal", "?"), code_class(rec), key_fields(rec))


def queue_samples(t, before, after):
    after_map = {k: recs for k, _, recs in after}
    for key, label, recs in before:
        other = after_map.get(key, [])
        if not recs and not other:
            continue
        t.add("  %-18s A: %s" % (label, signal_mix(recs) or "empty"))
        how, added = compare_queue(recs, other)
        if how != "different":
            t.add("  %-18s B: %s" % ("", t.c("32", "the same %s records, byte for byte" % fmt_n(len(recs)))
                                     + (t.c("33", ", then %d new from its timers" % added) if added else "")))
        else:
            t.add("  %-18s B: %s" % ("", t.c("1;31", signal_mix(other) or "empty")))
        for side, rs in (("A", recs), ("B", other)):
            if rs and (side == "A" or how == "different"):
                t.add("  %-18s    %s oldest: %s" % ("", side, describe(rs[0])))
                if len(rs) > 1:
                    t.add("  %-18s    %s newest: %s" % ("", side, describe(rs[-1])))


def class_counts(queues):
    counts = collections.Counter()
    for _, _, recs in queues:
        for rec in recs:
            counts[code_class(rec)] += 1
    return counts


def render_text(result, before, after, timings, ledger, ok, reasons, color, width):
    t = Text(color, width)
    src = result.get("from", {})
    dst = result.get("to", {})
    t.add(t.c("1", "sigmig: moving a signal-heavy process from %s to %s" %
               (src.get("label", "A"), dst.get("label", "B"))))
    wa = result.get("workload_a") or {}
    wb = result.get("workload_b") or {}
    t.add("  workload %s, %s threads: pid %s on %s (%s)  ->  pid %s on %s (%s)" % (
        wa.get("program", "sigstorm"), result.get("threads", "?"),
        wa.get("pid", "?"), src.get("label", "A"), src.get("kernel", "?"),
        wb.get("pid", "?"), dst.get("label", "B"), dst.get("kernel", "?")))
    if result.get("expect") == "rollback":
        t.add(t.c("33", "  expected outcome: rollback (fault injected: %s)" % result.get("fault", "?")))

    t.title("Pending signals, per queue (before on A, after on B)")
    exact = result.get("exact_snapshot", True)
    if not exact:
        t.add(t.c("33", "  note: the copy on B resumed before it could be looked at; 'after' is what it has not"))
        t.add(t.c("33", "  consumed yet. B's runtime re-read every requeued queue and compared it byte for byte."))
    restore = ((result.get("migrate") or {}).get("target_workload") or {}).get("restore")
    queue_table(t, before, after, exact, restore)

    t.title("What is pending (signal / si_code, oldest and newest record)")
    queue_samples(t, before, after)

    t.title("Counts by si_code class")
    cb, ca = class_counts(before), class_counts(after)
    for name in sorted(set(cb) | set(ca), key=lambda n: -cb.get(n, 0)):
        t.add("  %-14s %10s on A  %10s on B" % (name, fmt_n(cb.get(name, 0)), fmt_n(ca.get(name, 0))))

    t.title("Timings")
    line = "  " + "  |  ".join("%s %s" % (p, fmt_s(timings.get(p))) for p in PHASES)
    t.add(line)
    t.add("  %s: %s" % (downtime_label(result), t.c("1", fmt_s(timings.get("downtime")))))
    mig = result.get("migrate") or {}
    image = mig.get("image_size") or mig.get("image_bytes")
    if image:
        t.add("  image: %s bytes, %s signals" % (fmt_n(image), fmt_n(mig.get("signals"))))
    restore = (mig.get("target_workload") or {}).get("restore") or {}
    if restore:
        t.add("  B requeued %s signals and re-read every queue: %s" % (
            fmt_n(restore.get("requeued")),
            t.c("32", "verified byte for byte") if restore.get("verified") else t.c("1;31", "NOT verified")))

    t.title("Ledger (every signal sent, accounted for on both hosts)")
    t.add("  sent %s | delivered on A %s | migrated %s | delivered on B %s" % (
        fmt_n(ledger.get("sent")), fmt_n(ledger.get("delivered_a")),
        fmt_n(ledger.get("migrated")), fmt_n(ledger.get("delivered_b"))))
    bad = lambda k: t.c("1;31" if ledger.get(k) else "32", fmt_n(ledger.get(k)))
    t.add("  lost %s | duplicated %s | mismatched %s" % (bad("lost"), bad("duplicated"), bad("mismatched")))
    t.add()
    if ok and result.get("expect") == "rollback":
        t.add(t.c("1;42;30", "  PASS  ") + "  the move failed safely: the original kept every signal, nothing lost or duplicated")
    elif ok:
        t.add(t.c("1;42;30", "  PASS  ") + "  every pending signal arrived on B exactly once, byte for byte")
    else:
        t.add(t.c("1;41;37", "  FAIL  ") + "  " + "; ".join(reasons))
    return "\n".join(t.lines)


# --------------------------------------------------------------- HTML report

def downtime_label(result):
    """A copy held for the snapshot resumed later, when it was thawed."""
    if result.get("held_on_b"):
        return ("downtime, freeze to the copy ready on B (then held %ss frozen for this snapshot)"
                % result.get("held_seconds", "?"))
    return "total downtime (freeze to resume)"


def svg_timeline(timings, width=900, end_label="resume on B"):
    total = timings.get("downtime") or sum(timings.get(p) or 0 for p in PHASES)
    if not total:
        return "<p>no timings</p>"
    parts = [(p, timings.get(p) or 0) for p in PHASES]
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
                      html.escape(str(rec.get("signal", "?"))), html.escape(code_class(rec)),
                      html.escape(key_fields(rec))))
    out.append("</svg>")
    note = "" if per == 1 else " (one square = %d signals)" % per
    return "".join(out), note


def render_html(result, before, after, timings, ledger, ok, reasons, text):
    palette = class_palette(before, after)
    after_map = {k: (label, recs) for k, label, recs in after}
    rows = []
    for key, label, recs in before:
        other = after_map.get(key, (label, []))[1]
        sa, na = svg_queue(recs, palette)
        sb, nb = svg_queue(other, palette)
        how, added = compare_queue(recs, other)
        mark = {"identical": '<span class="ok">identical</span>',
                "timers": '<span class="ok">identical</span> + %d from timers on B' % added,
                "different": '<span class="bad">different</span>'}[how]
        rows.append("<tr><th>%s<br><small>%d &rarr; %d<br>%s</small></th><td>%s<small>%s</small></td>"
                    "<td>%s<small>%s</small></td></tr>" % (
                        html.escape(label), len(recs), len(other),
                        mark,
                        sa, na, sb, nb))
    legend = " ".join('<span class="sw" style="background:%s"></span>%s' % (c, html.escape(n))
                      for n, c in palette.items())
    led_cells = "".join("<td class='%s'>%s<br><small>%s</small></td>" % (
        "bad" if k in ("lost", "duplicated", "mismatched") and ledger.get(k) else "",
        fmt_n(ledger.get(k)), label) for k, label in (
        ("sent", "sent"), ("delivered_a", "delivered on A"), ("migrated", "migrated"),
        ("delivered_b", "delivered on B"), ("lost", "lost"), ("duplicated", "duplicated"),
        ("mismatched", "mismatched")))
    verdict_html = ('<div class="verdict pass">PASS: every pending signal arrived exactly once, byte for byte</div>'
                    if ok else '<div class="verdict fail">FAIL: %s</div>' % html.escape("; ".join(reasons)))
    src, dst = result.get("from", {}), result.get("to", {})
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
        "program": html.escape(str((result.get("workload_a") or {}).get("program", "sigstorm"))),
        "src": html.escape(src.get("label", "A")), "dst": html.escape(dst.get("label", "B")),
        "threads": html.escape(str(result.get("threads", "?"))),
        "pending": fmt_n(sum(len(r) for _, _, r in before)),
        "ka": html.escape(str(src.get("kernel", "?"))), "kb": html.escape(str(dst.get("kernel", "?"))),
        "verdict": verdict_html, "downtime": fmt_s(timings.get("downtime")),
        "downtime_span": html.escape("from freeze to the copy ready on B (held %ss more for the snapshot)"
                                     % result.get("held_seconds", "?")
                                     if result.get("held_on_b") else "from freeze to resume"),
        "timeline": svg_timeline(timings, end_label="ready on B" if result.get("held_on_b") else "resume on B"),
        "legend": legend, "rows": "".join(rows),
        "ledger": led_cells, "text": html.escape(text),
        "after_title": "after, on B" if result.get("exact_snapshot", True) else
                       "on B, moments later (it resumed at once; B verified the requeued queues itself)",
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
    except (OSError, ValueError) as e:
        print("report: cannot read %s: %s" % (args.result, e), file=sys.stderr)
        return 2
    before = extract_queues(result.get("before"))
    after = extract_queues(result.get("after"))
    timings = timings_of(result)
    ledger = ledger_of(result)
    if ledger.get("migrated") is None:
        ledger["migrated"] = sum(len(r) for _, _, r in before)
    ok, reasons = verdict(result, before, after, ledger)
    color = not args.no_color and sys.stdout.isatty() and os.environ.get("NO_COLOR") is None
    text = render_text(result, before, after, timings, ledger, ok, reasons, color, args.width)
    print(text)
    if args.html:
        plain = render_text(result, before, after, timings, ledger, ok, reasons, False, args.width)
        tmp = args.html + ".tmp"
        with open(tmp, "w") as f:
            f.write(render_html(result, before, after, timings, ledger, ok, reasons, plain))
        os.replace(tmp, args.html)
        print("\nHTML report: %s" % args.html)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
