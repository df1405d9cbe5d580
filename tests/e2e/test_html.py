"""`report --html` and `diff --html`, opened in a real browser.

The stress harness is recorded under glibc and musl; the report of each run and the diff of the
two are written as HTML and opened in headless Chromium (headless_chromium.py, DevTools protocol
over a pipe).  A page passes when the browser raised no exception and logged no error, the page
asked for nothing but itself (no network: no http(s) reference at all), and its plots were drawn
from the numbers the JSON reports give: bars of nonzero size as long as the times they stand
for, axes with tick labels, histogram and timeline paths that cover an area, the waterfall's
unexplained remainder as large as the measured gap less the attributed one.  Screenshots of the
pages are kept in the build directory (test-artifacts/html/).

Without Chromium the tests are skipped, except in CI (CI=true), which installs it
(scripts/install-deps): there a missing browser is a failure.
"""
import json
import os
import re
import struct
import subprocess
import unittest

import headless_chromium
from allocscope_e2e import BUILD, CLI, E2ETestCase, target

ARTIFACTS = os.path.join(BUILD, "test-artifacts", "html")
THREADS, ITERS, SAMPLE = 4, 100_000, 16

# What the page drew, measured by the browser (SVG user units are CSS pixels here).
PROBE = r"""
(() => {
  const box = e => { const b = e.getBBox(); return [b.width, b.height]; };
  const title = e => { const t = e.querySelector('title'); return t ? t.textContent : ''; };
  return {
    verdict: (document.getElementById('verdict') || {}).textContent || null,
    cuts: [...document.querySelectorAll('#cuts li')].map(li => li.textContent),
    scripts: document.scripts.length,
    charts: [...document.querySelectorAll('svg.chart')].map(s => ({
      label: s.getAttribute('aria-label'),
      kind: s.getAttribute('class').replace('chart ', ''),
      size: [s.getBoundingClientRect().width, s.getBoundingClientRect().height],
      axes: s.querySelectorAll('g.axis').length,
      tick_labels: [...s.querySelectorAll('g.axis .tick-label')].map(t => t.textContent),
      asides: [...s.querySelectorAll('text.aside')].map(t => t.textContent),
      caption: (s.querySelector('.panel-caption') || {}).textContent || '',
      zero_axis: !!s.querySelector('g.zero-axis'),
      zero_bins: [...s.querySelectorAll('rect.hit title')].filter(t => t.textContent.includes(' 0 (under ') ||
                                                                       t.textContent.startsWith('0 (under ')).length,
      domain_right: (() => { const d = s.querySelector('g.x-axis .domain'); return d ? d.getBBox().x + d.getBBox().width : null; })(),
      max_marks: [...s.querySelectorAll('rect.max-mark')].map(r => ({x: r.getBBox().x, title: title(r)})),
      rows: [...s.querySelectorAll('g.bar')].map(g => ({
        label: g.previousElementSibling ? g.previousElementSibling.textContent : '', width: box(g)[0],
        y: g.getBBox().y})),
      error_bars: [...s.querySelectorAll('g.error-bar')].map(g => ({x: g.getBBox().x, width: g.getBBox().width,
                                                                    y: g.getBBox().y + g.getBBox().height / 2})),
      marks: [...s.querySelectorAll('rect.seg, rect.step')].map(r => ({
        cls: r.getAttribute('class'), title: title(r), size: box(r)})),
      paths: [...s.querySelectorAll('path')].map(p => ({cls: p.getAttribute('class'), size: box(p)})),
    })),
  };
})()
"""


UNITS = {"ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}


def parse_duration(text):
    """ns of a duration as the pages write it: "15.67 ms", "48.71 µs"."""
    number, unit = text.strip().split(" ")
    return float(number.replace(",", "")) * UNITS[unit]


# The page's width, what overflows it, the legend, and the colour each mark class is drawn in.
LAYOUT = r"""
(() => {
  const de = document.documentElement;
  const fills = {};
  for (const e of document.querySelectorAll('svg .seg, svg .step, svg path.hist, svg path.area, svg .swatch')) {
    for (const c of e.classList) {
      if (['seg', 'step', 'hist', 'area', 'swatch', 'hit'].includes(c)) continue;
      const fill = getComputedStyle(e).fill;
      if (fill !== 'none') (fills[c] = fills[c] || new Set()).add(fill);
    }
  }
  const legend = [...document.querySelectorAll('#legend .key')].map(k => ({
    name: k.textContent, cls: k.querySelector('.sw').classList[1],
    colour: getComputedStyle(k.querySelector('.sw')).backgroundColor}));
  const labels = [...document.querySelectorAll('svg.chart')].map(s => {
    const boxes = [...s.querySelectorAll('g.x-axis .tick-label')].map(t => t.getBoundingClientRect());
    let overlaps = 0;
    for (let i = 1; i < boxes.length; ++i) if (boxes[i].left < boxes[i - 1].right) ++overlaps;
    return overlaps;
  });
  return {scroll: de.scrollWidth, client: de.clientWidth, legend,
          fills: Object.fromEntries(Object.entries(fills).map(([k, v]) => [k, [...v]])),
          overlapping_labels: labels.reduce((a, b) => a + b, 0)};
})()
"""


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


class HtmlPages(E2ETestCase):
    @classmethod
    def setUpClass(cls):
        if not headless_chromium.find_chromium():
            if os.environ.get("CI"):
                raise AssertionError("chromium is not installed; CI must install it (scripts/install-deps)")
            raise unittest.SkipTest("chromium is not installed (scripts/install-deps installs Debian's chromium)")
        cls.shared = E2ETestCase("run")
        cls.shared.setUp()
        os.makedirs(ARTIFACTS, exist_ok=True)
        cls.profiles, cls.pages, cls.loaded = {}, {}, {}
        for libc in ("glibc", "musl"):
            run = cls.shared.record([target(f"harness-{libc}"), str(THREADS), str(ITERS)], sample=SAMPLE,
                                    out=f"{libc}.asp")
            if run.rc != 0 or not run.profiles:
                raise AssertionError(f"recording harness-{libc} failed: {run.stderr}")
            cls.profiles[libc] = run.profiles[0]
            cls.pages[libc] = cls.write_page(["report", run.profiles[0]], f"report-{libc}.html")
        cls.pages["diff"] = cls.write_page(["diff", cls.profiles["glibc"], cls.profiles["musl"]], "diff.html")
        cls.compare_rows = ["glibc", "jemalloc", "musl (variant)"]
        cls.pages["compare"] = cls.write_page(
            ["compare", "--runs", "1", "--sample", str(SAMPLE), "--allocators", "glibc,jemalloc",
             "--variant", f"musl={target('harness-musl')}", "--", target("harness-glibc"), "2", "20000"],
            "compare.html")
        for name, page in cls.pages.items():
            cls.loaded[name] = headless_chromium.load(page, PROBE, screenshot=os.path.join(ARTIFACTS, f"{name}.png"))

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    @classmethod
    def write_page(cls, command, name):
        path = os.path.join(cls.shared.dir, name)
        if "--" in command:  # compare: its options go before the workload's command
            at = command.index("--")
            command = command[:at] + ["--html", path] + command[at:]
        else:
            command = command + ["--html", path]
        proc = subprocess.run([CLI, *command], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise AssertionError(f"{command} --html failed: {proc.stderr}")
        return path

    def json_of(self, *command):
        proc = subprocess.run([CLI, *command, "--json"], capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def chart(self, name, label_start):
        charts = [c for c in self.loaded[name].value["charts"] if c["label"].startswith(label_start)]
        self.assertTrue(charts, f"{name}: no chart '{label_start}…'")
        return charts

    # ---- every page ----

    def test_no_errors_and_no_requests(self):
        for name, result in self.loaded.items():
            with self.subTest(page=name):
                self.assertEqual(result.errors, [])
                self.assertEqual(len(result.requests), 1, result.requests)
                self.assertTrue(result.requests[0].startswith("file://"), result.requests)
                self.assertEqual(result.value["scripts"], 0)

    def test_self_contained(self):
        for name, page in self.pages.items():
            with self.subTest(page=name):
                with open(page, encoding="utf-8") as f:
                    html = f.read()
                self.assertIsNone(re.search(r"https?:", html, re.I))
                self.assertIsNone(re.search(r"<(script|img|link|iframe|object|embed)\b", html, re.I))
                self.assertIsNone(re.search(r"\b(src|href)\s*=|url\(", html, re.I))
                self.assertIn("default-src 'none'", html)
                self.assertLess(len(html.encode()), 4 << 20)

    def test_screenshots_saved(self):
        for name, result in self.loaded.items():
            with self.subTest(page=name):
                size = png_size(result.screenshot)
                self.assertIsNotNone(size, result.screenshot)
                self.assertEqual(size[0], 1000)
                # The whole page, not one screen (compare's page is a short one).
                self.assertGreater(size[1], 400 if name == "compare" else 1000)

    def test_every_chart_has_axes_and_marks(self):
        for name, result in self.loaded.items():
            for c in result.value["charts"]:
                with self.subTest(page=name, chart=c["label"]):
                    self.assertGreater(c["size"][0], 0)
                    self.assertGreater(c["size"][1], 0)
                    self.assertGreaterEqual(c["axes"], 1)
                    self.assertGreaterEqual(len(c["tick_labels"]), 2)
                    drawn = [m for m in c["marks"] if m["size"][0] > 0 and m["size"][1] > 0]
                    areas = [p for p in c["paths"] if p["size"][0] > 0 and p["size"][1] > 0]
                    self.assertTrue(drawn or areas, "nothing drawn")

    # ---- report ----

    def test_report_verdict_and_class_bars_match_the_json_report(self):
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                j = self.json_of("report", self.profiles[libc])
                result = self.loaded[libc].value
                self.assertEqual(result["verdict"], j["verdict"]["text"])
                [bars] = self.chart(libc, "allocator time per size class")
                times = {c["label"]: c["time_ns"] for c in j["classes"]}
                rows = [r for r in bars["rows"] if r["label"] in times]
                self.assertGreater(len(rows), 0)
                widest = max(rows, key=lambda r: r["width"])
                # The longest bar is the largest time, up to the 0.1 px the SVG's coordinates are
                # written to (classes whose times differ by less may swap).
                self.assertGreaterEqual(times[widest["label"]] * (1 + 0.2 / widest["width"]),
                                        max(times[r["label"]] for r in rows))
                for r in rows:  # bar lengths in proportion to the times
                    expected = widest["width"] * times[r["label"]] / times[widest["label"]]
                    self.assertAlmostEqual(r["width"], expected, delta=1.0 + 0.01 * expected, msg=r["label"])
                for m in bars["marks"]:
                    self.assertRegex(m["title"], r": (fast path|slow but running|waiting \(blocked\)) ")
                # Each class's ± bound as an error bar across the end of its bar, 2 × error wide.
                errors = {c["label"]: c["time_error_ns"] for c in j["classes"]}
                unit = widest["width"] / times[widest["label"]]
                for r in rows:
                    bar = [e for e in bars["error_bars"] if r["y"] <= e["y"] <= r["y"] + 12]
                    if errors[r["label"]] * unit < 1:
                        continue  # under a pixel: there may be nothing to see
                    self.assertEqual(len(bar), 1, r["label"])
                    half = min(errors[r["label"]], times[r["label"]]) + errors[r["label"]]
                    self.assertAlmostEqual(bar[0]["width"], half * unit, delta=1.5 + 0.03 * half * unit, msg=r["label"])

    def test_report_histograms_on_log_axes(self):
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                panels = self.chart(libc, "latency histogram: ")
                for p in panels:
                    self.assertEqual(p["axes"], 3 if p["zero_axis"] else 2)  # the "0" column has its own
                    hist = [x for x in p["paths"] if x["cls"].startswith("hist")]
                    self.assertTrue(hist and all(x["size"][0] > 0 and x["size"][1] > 0 for x in hist), p["label"])
                    # Log scales: decades on the latency axis, powers of ten on the count axis.
                    self.assertTrue(any(t in p["tick_labels"] for t in ("10 ns", "100 ns", "1 µs")), p["tick_labels"])
                    self.assertIn("10", p["tick_labels"])

    def test_report_timeline_and_lanes(self):
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                [timeline] = self.chart(libc, "threads inside the allocator over time")
                mean = [p for p in timeline["paths"] if p["cls"] == "area mean"]
                self.assertEqual(len(mean), 1)
                self.assertGreater(mean[0]["size"][1], 0)  # some time with a thread inside
                [lanes] = self.chart(libc, "per-thread time inside the allocator")
                busy = [p for p in lanes["paths"] if p["cls"] == "area busy" and p["size"][1] > 0]
                self.assertGreaterEqual(len(busy), THREADS)  # every worker was inside at some point

    def test_no_horizontal_overflow_at_1000_and_1400_px(self):
        for name, page in self.pages.items():
            for width in (1000, 1400):
                with self.subTest(page=name, width=width):
                    v = headless_chromium.load(page, LAYOUT, width=width).value
                    self.assertLessEqual(v["scroll"], v["client"], f"{name} at {width} px scrolls sideways")
                    self.assertEqual(v["client"], width)
                    self.assertEqual(v["overlapping_labels"], 0, name)

    def test_one_colour_per_meaning_and_a_shared_legend(self):
        layouts = {name: headless_chromium.load(page, LAYOUT).value for name, page in self.pages.items()}
        legends = {name: [(k["name"], k["cls"], k["colour"]) for k in v["legend"]] for name, v in layouts.items()}
        first = next(iter(legends.values()))
        self.assertTrue(first)
        for name, legend in legends.items():
            self.assertEqual(legend, first, f"{name}'s legend differs")
        colour_of = {cls: colour for _, cls, colour in first}
        self.assertEqual(len(set(colour_of.values())), len(colour_of), "two meanings share a colour")
        for name, v in layouts.items():
            for cls, fills in v["fills"].items():
                if cls in colour_of:
                    self.assertEqual(fills, [colour_of[cls]], f"{name}: .{cls} drawn in {fills}")

    def test_histograms_span_the_data_with_a_zero_bin(self):
        for name in ("glibc", "musl", "diff"):
            panels = self.chart(name, "latency histogram: ")
            for panel in panels:
                with self.subTest(page=name, panel=panel["label"]):
                    # The slowest call is marked, inside the axis (the caption's max on report pages).
                    self.assertTrue(panel["max_marks"], panel["label"])
                    for mark in panel["max_marks"]:
                        self.assertLessEqual(mark["x"], panel["domain_right"] + 0.5, mark)
                    m = re.search(r"max ([\d.,]+ (?:ns|µs|ms|s))\b", panel["caption"])
                    if m:
                        shown = parse_duration(m.group(1))
                        marked = [parse_duration(m["title"].split("slowest call: ")[1]) for m in panel["max_marks"]]
                        self.assertIn(shown, marked)
                    # Calls under 1 ns have a "0" bin of their own, apart from the log axis.
                    if panel["zero_bins"]:
                        self.assertTrue(panel["zero_axis"], panel)
            # The panels share their axes: the "0" column is on all of them when one has such calls.
            self.assertEqual({p["zero_axis"] for p in panels}, {any(p["zero_bins"] for p in panels)}, name)

    # ---- diff ----

    def test_diff_verdict_and_waterfall_match_the_json_diff(self):
        j = self.json_of("diff", self.profiles["glibc"], self.profiles["musl"])
        result = self.loaded["diff"].value
        self.assertEqual(result["verdict"], j["verdict"]["text"])
        for label in ("waterfall of the difference by component", "waterfall of the difference by size"):
            [w] = self.chart("diff", label)
            steps = {m["title"].split(":")[0]: m for m in w["marks"]}
            measured = steps["measured difference (thread time)"]
            rest = steps["not attributed (outside allocator calls)"]
            attributed = steps["attributed to the allocator"]
            self.assertIn("rest", rest["cls"])
            unit = measured["size"][0] / abs(j["measured_delta_ns"])
            gap = abs(j["measured_delta_ns"] - j["attributed_delta_ns"])
            self.assertAlmostEqual(rest["size"][0], max(1.0, gap * unit), delta=1.5 + 0.01 * gap * unit)
            self.assertAlmostEqual(attributed["size"][0], max(1.0, abs(j["attributed_delta_ns"]) * unit),
                                   delta=1.5 + 0.01 * abs(j["attributed_delta_ns"]) * unit)

    def test_diff_draws_both_runs(self):
        self.assertEqual(len(self.chart("diff", "threads inside the allocator over time")), 2)
        [bars] = self.chart("diff", "allocator time per size, BASE and OTHER")
        self.assertTrue(any(r["label"].endswith(" BASE") and r["width"] > 0 for r in bars["rows"]))
        self.assertTrue(any(r["label"].endswith(" OTHER") and r["width"] > 0 for r in bars["rows"]))
        panels = self.chart("diff", "latency histogram: ")
        classes = {p["cls"] for panel in panels for p in panel["paths"] if p["cls"].startswith("hist")}
        self.assertEqual(classes, {"hist base", "hist other"})


    # ---- compare ----

    def test_compare_draws_one_bar_per_row_as_long_as_its_wall_time(self):
        [chart] = self.chart("compare", "Wall time per row")
        self.assertEqual([r["label"] for r in chart["rows"]], self.compare_rows)
        widths = [r["width"] for r in chart["rows"]]
        self.assertTrue(all(w > 0 for w in widths), widths)
        # Each bar as long as the wall time written beside it (whichever row the machine made slowest).
        walls = [parse_duration(a.split(" · ")[0]) for a in chart["asides"]]
        for w, t in zip(widths, walls):
            self.assertAlmostEqual(w / widths[0], t / walls[0], delta=0.02 * t / walls[0] + 0.01, msg=(widths, walls))
        # The verdict names the row furthest from the baseline (one of those within the rounding of
        # the printed wall times of it: the verdict reads the exact ones).
        distance = {i: abs(walls[i] / walls[0] - 1) for i in range(1, len(walls))}
        furthest = [self.compare_rows[i] for i, d in distance.items() if d >= max(distance.values()) - 0.01]
        verdict = self.loaded["compare"].value["verdict"]
        self.assertTrue(any(verdict.startswith(f"{row} is ") for row in furthest), (verdict, walls))
        # The allocator's time in the same three parts and colours as report's bars.
        series = {m["cls"] for m in chart["marks"]}
        self.assertTrue(series <= {"seg fast", "seg slow", "seg wait", "seg other-time"}, series)


class HtmlUsage(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)

    def test_usage_errors(self):
        for args in (["report", "a.asp", "--html"], ["report", "a.asp", "b.asp", "--html", "x.html"],
                     ["report", "a.asp", "--json", "--html", "x.html"], ["diff", "a.asp", "b.asp", "--html"],
                     ["diff", "a.asp", "b.asp", "--json", "--html", "x.html"]):
            with self.subTest(args=args):
                proc = self.run_cli(*args)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn("html", proc.stderr)


if __name__ == "__main__":
    unittest.main()
