#!/usr/bin/env python3
"""Summarizes a bench/run output directory as Markdown: medians and spread,
locket/sqlite3 ratios, and SPEC §11's targets, met or not."""
import glob, json, os, re, statistics, sys

out = sys.argv[1]
ms = lambda s: s * 1000.0


def load(name):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        return None
    groups = {}
    for r in json.load(open(path))["results"]:
        label = r["command"]
        if r.get("parameters"):  # unnamed, parametrized: group by program
            label = os.path.basename(label.split()[0])
        groups.setdefault(label, []).extend(r["times"])
    return groups


def stats(times):
    t = sorted(times)
    q = statistics.quantiles(t, n=4) if len(t) >= 4 else [t[0], statistics.median(t), t[-1]]
    return {"median": statistics.median(t), "q1": q[0], "q3": q[2], "min": t[0], "max": t[-1], "n": len(t)}


def fmt(s):
    return f"{ms(s['median']):.2f} ms (IQR {ms(s['q1']):.2f}–{ms(s['q3']):.2f}, min {ms(s['min']):.2f}, n={s['n']})"


def paired_ratio(a, b):
    k = min(len(a), len(b))
    return statistics.median(x / y for x, y in zip(a[:k], b[:k]))


def rss_kib(path):
    if not os.path.exists(path):
        return None
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(path).read())
    return int(m.group(1)) if m else None


def wall_s(path):
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", open(path).read())
    if not m:
        return None
    return int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))


import_rss = {}


def memory(path):
    """bench/memory.py's figures (KiB by name), or None."""
    if not os.path.exists(path):
        return None
    figures = dict(line.split(": ") for line in open(path).read().splitlines() if ": " in line)
    return {k: int(v) for k, v in figures.items()} if "VmHWM" in figures and "RssAnon" in figures else None


def callgrind(path):
    if not os.path.exists(path):
        return None, []
    text = open(path).read().splitlines()
    total, top = None, []
    for i, line in enumerate(text):
        if "PROGRAM TOTALS" in line:
            total = int(line.split()[0].replace(",", ""))
        m = re.match(r"\s*([\d,]+) \(\s*([\d.]+)%\)\s+(\S+?):(.*?)(?: \[.*\])?$", line)
        if m and "PROGRAM TOTALS" not in line and len(top) < 5:
            top.append((int(m.group(1).replace(",", "")), m.group(2), m.group(4).strip()[:90]))
    return total, top


sizes = sorted(int(re.search(r"load-(\d+)", p).group(1)) for p in glob.glob(os.path.join(out, "load-*.json")))
print("# locket benchmark figures\n")
print("```\n" + open(os.path.join(out, "machine.txt")).read().strip() + "\n```\n")
verdicts = []

unlock, weak = load("unlock"), load("unlock-weak")
if unlock and weak:
    real = stats(unlock["unlock (Argon2id)"]); w = stats(weak["unlock (test KDF)"]); sh = stats(weak["sh + printf + /bin/true"])
    print("## unlock\n")
    print(f"- `unlock`, real Argon2id: {fmt(real)}")
    print(f"- `unlock`, same keychain made with the test KDF: {fmt(w)}")
    print(f"- `sh -c \"printf | /bin/true\"` (the harness): {fmt(sh)}")
    over = w["median"] - sh["median"]
    print(f"- so Argon2id ≈ {ms(real['median'] - w['median']):.1f} ms and everything else ≈ {ms(over):.2f} ms\n")
    verdicts.append(("`unlock` = Argon2id + < 5 ms", f"Argon2id + {ms(over):.2f} ms", ms(over) < 5))

pairs = [("find", "locket", "sqlite3", "`find -w` of a random existing item vs indexed SELECT"),
         ("findattr", "locket", "sqlite3", "`find -j COMMENT -w` (non-key attribute) vs SELECT on an indexed column"),
         ("add", "locket add", "sqlite3 INSERT", "`add` vs one INSERT"),
         ("update", "locket update --data-file", "sqlite3 UPDATE", "`update` of the secret vs one UPDATE"),
         ("delete", "locket delete", "sqlite3 DELETE", "`delete` vs one DELETE"),
         ("cold", "locket find -w, cold", "sqlite3 SELECT, cold", "first `find -w` after dropping the page cache vs the same SELECT"),
         ("exec", "locket exec, 5 references", "locket find -w", "`exec` with 5 references (child /bin/true) vs one `find -w`")]

for n in sizes:
    ld = json.load(open(os.path.join(out, f"load-{n}.json")))
    print(f"## {n:,} items\n")
    print(f"Bulk load (Keychain.addBatch, 10 k per transaction): {ld['locket_load_s']:.1f} s "
          f"({n / ld['locket_load_s']:,.0f} items/s), keychain {ld['keychain_bytes'] / 2**20:.1f} MiB; "
          f"the plain sqlite3 table: {ld['sqlite_load_s']:.2f} s, {ld['plain_bytes'] / 2**20:.1f} MiB.\n")
    print("| operation | locket | sqlite3 shell | ratio of medians | median paired ratio |")
    print("| --- | --- | --- | --- | --- |")
    tr = load(f"true-{n}")
    for key, a, b, what in pairs:
        g = load(f"{key}-{n}")
        if not g or a not in g:
            continue
        sa, sb = stats(g[a]), stats(g[b])
        r = sa["median"] / sb["median"]
        print(f"| {what} | {fmt(sa)} | {fmt(sb)} | **{r:.2f}** | {paired_ratio(g[a], g[b]):.2f} |")
        pr = paired_ratio(g[a], g[b])
        if key == "find":
            verdicts.append((f"`find -w` ≤ 0.75x the sqlite3 SELECT ({n:,})", f"{ms(sa['median']):.2f} vs {ms(sb['median']):.2f} ms, ratio {r:.2f} (paired {pr:.2f})", r <= 0.75))
        if key == "add":
            verdicts.append((f"`add` ≤ 0.9x one sqlite3 INSERT ({n:,})", f"{ms(sa['median']):.2f} vs {ms(sb['median']):.2f} ms, ratio {r:.2f} (paired {pr:.2f})", r <= 0.9))
        if key == "cold":
            verdicts.append((f"cold first `find` < 20 ms ({n:,})", f"{ms(sa['median']):.1f} ms", ms(sa["median"]) < 20))
        if key == "exec":
            verdicts.append((f"`exec` with 5 references < 2x `find -w` ({n:,})", f"{ms(sa['median']):.2f} vs {ms(sb['median']):.2f} ms, ratio {r:.2f} (paired {pr:.2f})", r < 2))
    if tr:
        print(f"| `/bin/true` (process floor) | {fmt(stats(tr['/bin/true']))} | | | |")
    dump = load(f"dump-{n}")
    if dump:
        print()
        for name in ("locket dump", "locket dump --data", "sqlite3 SELECT *"):
            s = stats(dump[name])
            print(f"- `{name}`: {fmt(s)} → {n / s['median']:,.0f} items/s")
        rd = rss_kib(os.path.join(out, f"time-{n}-dump.txt")); rdd = rss_kib(os.path.join(out, f"time-{n}-dump--data.txt"))
        print(f"- peak RSS: `dump` {rd / 1024:.1f} MiB, `dump --data` {rdd / 1024:.1f} MiB")
        if n >= 100000:
            for name in ("dump", "dump --data"):
                rate = n / stats(dump["locket " + name])["median"]
                verdicts.append((f"`{name}` ≥ 250 k items/s ({n:,})", f"{rate:,.0f} items/s", rate >= 250000))
            verdicts.append((f"`dump` flat memory ({n:,})", f"peak RSS {rdd / 1024:.1f} MiB", rdd < 16 * 1024))
    imports = [os.path.join(out, f"time-{n}-import-{i}.txt") for i in (1, 2, 3)]
    walls = [wall_s(p) for p in imports if os.path.exists(p)]
    if walls:
        wall = sorted(walls)[len(walls) // 2]
        ri = max(rss_kib(p) or 0 for p in imports if os.path.exists(p))
        import_rss[n] = ri
        print(f"- `import` of a backup of {n:,} items: median {wall:.2f} s → {n / wall:,.0f} items/s; peak RSS {ri / 1024:.1f} MiB")
        if n >= 100000:
            verdicts.append((f"`import` of a backup ≥ 50 k items/s ({n:,})", f"{n / wall:,.0f} items/s", n / wall >= 50000))
            smallest = min(import_rss)
            if smallest < n:
                grown = (ri - import_rss[smallest]) / 1024
                verdicts.append((f"`import` flat memory ({smallest:,} → {n:,} items)", f"peak RSS +{grown:.1f} MiB", grown < 8))
    finds = [memory(os.path.join(out, f"memory-{n}-find-{i}.txt")) for i in (1, 2, 3)]
    finds = [f for f in finds if f]
    if finds:
        hwm = statistics.median(f["VmHWM"] for f in finds); anon = statistics.median(f["RssAnon"] for f in finds)
        sq = memory(os.path.join(out, f"memory-{n}-sqlite3.txt"))
        shell = f" (sqlite3 shell SELECT: {sq['VmHWM'] / 1024:.1f} MiB, private {sq['RssAnon'] / 1024:.1f} MiB)" if sq else ""
        print(f"- peak RSS of `find -w` (VmHWM, binary read back from disk; median of {len(finds)}): {hwm / 1024:.1f} MiB, "
              f"of which private (RssAnon at exit) {anon / 1024:.1f} MiB{shell}")
        verdicts.append((f"peak memory of `find` < 8 MiB ({n:,})", f"{hwm / 1024:.1f} MiB peak RSS, {anon / 1024:.1f} MiB private", hwm < 8 * 1024))
    for who in ("locket", "sqlite3"):
        total, top = callgrind(os.path.join(out, f"callgrind-{who}-{n}.txt"))
        if total:
            if who == "locket":
                verdicts.append((f"`find -w` ≤ 1.2 M instructions ({n:,})", f"{total:,}", total <= 1200000))
            print(f"- callgrind, {who} {'find -w' if who == 'locket' else 'SELECT'}: **{total:,} instructions**; top 5 (self):")
            for ir, pct, fn in top:
                print(f"    - {ir:,} ({pct}%) {fn}")
    print()

if sizes:
    print("## SPEC §11 targets\n")
    print("| target | measured | met |")
    print("| --- | --- | --- |")
    for what, got, ok in verdicts:
        print(f"| {what} | {got} | {'yes' if ok else '**no**'} |")
