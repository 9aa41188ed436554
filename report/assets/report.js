// Renders the cf-benchmark report from the JSON embedded in the page (id "report-data"):
// tables with plain DOM, charts with uPlot. Nothing is fetched. Every chart is listed in
// window.cfbCharts ({id, kind, plot}) so that a test can check what it drew.
// window.cfbRender(data, root) draws a report's JSON into the element root (appending to
// it): the live page (live.js) calls it again with each update, each time into a new root.
window.cfbRender = function (data, root) {
  "use strict";
  var colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"];
  var layerColors = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948"];
  window.cfbCharts = [];
  var chartNo = 0;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function add(parent, tag, attrs, text) { var e = el(tag, attrs, text); parent.appendChild(e); return e; }
  function ms(us) { if (us === null || us === undefined) return "–"; var m = us / 1000; return m < 10 ? m.toFixed(3) : m < 1000 ? m.toFixed(1) : m.toFixed(0); }
  function num(x) {
    if (x === null || x === undefined || !isFinite(x)) return "–";
    if (Math.abs(x) >= 100) return Math.round(x).toLocaleString("en-US");
    return Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2);
  }
  function load(x) { return x === Math.round(x) ? String(x) : num(x); }
  function pct(f) { return f === null || f === undefined ? "–" : (100 * f).toFixed(f < 0.1 ? 2 : 1) + "%"; }
  function opt(x, d) { return x === null || x === undefined ? "–" : x.toFixed(d); }
  function ratio(x) { return x === null || x === undefined ? "–" : x.toFixed(2) + "×"; }

  function table(parent, head, rows, cls) {
    var t = add(parent, "table", cls ? { "class": cls } : {});
    var tr = add(add(t, "thead"), "tr");
    head.forEach(function (h) { add(tr, "th", {}, h); });
    var tb = add(t, "tbody");
    rows.forEach(function (r) {
      var row = add(tb, "tr");
      r.forEach(function (c) { add(row, "td", {}, c); });
    });
    return t;
  }

  // union of x values, each series' y at those x (null where it has none)
  function align(sets) {
    var xs = [];
    sets.forEach(function (s) { s.x.forEach(function (x) { if (xs.indexOf(x) < 0) xs.push(x); }); });
    xs.sort(function (a, b) { return a - b; });
    var out = [xs];
    sets.forEach(function (s) {
      out.push(xs.map(function (x) { var i = s.x.indexOf(x); return i < 0 ? null : s.y[i]; }));
    });
    return out;
  }

  function chart(parent, kind, title, opts, aligned) {
    var box = add(parent, "figure", { "class": "chart", "data-kind": kind });
    add(box, "figcaption", {}, title);
    var id = "chart-" + (++chartNo);
    box.id = id;
    opts.width = Math.min(900, Math.max(480, (root.clientWidth || 900) - 40));
    opts.height = opts.height || 260;
    opts.legend = opts.legend || { show: true };
    var plot = new uPlot(opts, aligned, box);
    window.cfbCharts.push({ id: id, kind: kind, title: title, plot: plot });
    return plot;
  }

  function line(label, color, extra) {
    var s = { label: label, stroke: color, width: 2, spanGaps: true, points: { show: true, size: 6, fill: color } };
    for (var k in extra || {}) s[k] = extra[k];
    return s;
  }

  // intTicks are the tick increments of an axis whose values are whole numbers (users,
  // instances, steps): no tick between two of them.
  var intTicks = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000];
  function loadAxis(label, xs) {
    var ax = { label: label };
    if (xs.every(function (x) { return x === Math.round(x); })) ax.incrs = intTicks;
    return ax;
  }
  // padded keeps the points at either end of an x-y chart off its edges.
  function padded(u, mn, mx) { var d = (mx - mn) * 0.04 || 1; return [mn - d, mx + d]; }
  function allLoads(vs) { return [].concat.apply([], vs.map(function (v) { return v.steps.map(function (s) { return s.load; }); })); }

  var levelColors = { fail: "#b00020", warn: "#8a5a00" };
  // findingMarkers draws each finding of a variant's step as a triangle above the
  // step's point (x and y from at(variant, step); y null: at the top of the plot), with
  // its check's name, and lists what it drew in u.cfbMarkers.
  function findingMarkers(findings, at) {
    return function (u) {
      var ctx = u.ctx, px = devicePixelRatio;
      u.cfbMarkers = [];
      ctx.save();
      ctx.font = Math.round(10 * px) + "px sans-serif";
      ctx.textAlign = "left"; ctx.textBaseline = "middle";
      var seen = {};
      findings.forEach(function (f) {
        var p = f.step ? at(f.variant, f.step) : null;
        if (!p) return;
        var k = f.variant + "/" + f.step, nth = seen[k] = (seen[k] || 0) + 1; // several on one step: stacked
        var x = u.valToPos(p[0], "x", true), y = (p[1] === null ? u.bbox.top + 28 * px : u.valToPos(p[1], "y", true) - 9 * px) + (p[1] === null ? 1 : -1) * (nth - 1) * 12 * px;
        ctx.fillStyle = levelColors[f.level] || "#555";
        ctx.beginPath(); ctx.moveTo(x, y + 5 * px); ctx.lineTo(x - 5 * px, y - 4 * px); ctx.lineTo(x + 5 * px, y - 4 * px); ctx.closePath(); ctx.fill();
        ctx.fillText(f.check, x + 7 * px, y);
        u.cfbMarkers.push({ variant: f.variant, step: f.step, check: f.check });
      });
      ctx.restore();
    };
  }

  // pointLabels writes each point's step number beside it, for charts whose x is not
  // the load, where points are drawn without lines.
  function pointLabels(steps) {
    return function (u) {
      var ctx = u.ctx, px = devicePixelRatio;
      ctx.save();
      ctx.font = Math.round(10 * px) + "px sans-serif";
      ctx.textAlign = "left"; ctx.textBaseline = "bottom";
      ctx.fillStyle = "#333";
      for (var si = 1; si < u.series.length; si++) {
        u.data[si].forEach(function (y, i) {
          var n = steps[si - 1][u.data[0][i]];
          if (y === null || y === undefined || n === undefined) return;
          ctx.fillText("step " + n, u.valToPos(u.data[0][i], "x", true) + 6 * px, u.valToPos(y, "y", true) - 4 * px);
        });
      }
      ctx.restore();
    };
  }

  // stepLines draws the step boundaries of a time chart.
  function stepLines(windows) {
    return function (u) {
      var ctx = u.ctx;
      ctx.save();
      ctx.strokeStyle = "#999";
      ctx.setLineDash([4, 4]);
      ctx.lineWidth = 1;
      ctx.fillStyle = "#555";
      ctx.font = Math.round(10 * devicePixelRatio) + "px sans-serif";
      windows.forEach(function (w) {
        var x = Math.round(u.valToPos(w.start_s, "x", true));
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
        ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
        ctx.fillText("step " + w.step, x + 3, u.bbox.top + 12 * devicePixelRatio);
      });
      ctx.restore();
    };
  }

  // faultSection shows each fault the spec injected (ramp.faults): what it hit and
  // when, the time until the instance ran again and until the p99 was back, the p99
  // before against from the fault until back, the failed requests by class, and a
  // chart of the p99 per second after it against the pre-fault limit.
  function faultSection(sec, run) {
    var count = function (x) { return Math.round(x).toLocaleString("en-US"); };
    add(sec, "h3", {}, "5a. Faults injected");
    run.faults.forEach(function (f) {
      var box = add(sec, "div", { "class": "fault" });
      add(box, "h4", {}, f.variant + " step " + f.step + ", " + f.offset_s.toFixed(1) + " s in: " + f.action + " of " + f.what);
      if (f.error) { add(box, "p", { "class": "note" }, "Not applied: " + f.error); return; }
      var running = f.running_again_s !== undefined ? f.running_again_s.toFixed(1) + " s" : f.not_running_again ? "not within the step" : "–";
      var back = f.recovery === "back" ? f.back_s.toFixed(0) + " s" : f.recovery === "undisturbed" ? "never left it" :
        f.recovery === "not_back" ? "not recovered within the step" : "no requests before the fault";
      var classes = Object.keys(f.failed_by_class || {}).sort().map(function (k) { return k + " " + count(f.failed_by_class[k]); }).join(", ");
      table(box, ["instance running again", "p99 back within the pre-fault level", "p99 before", "p99 from the fault until back", "failed after the fault", "by class"], [[
        running, back, ms(f.p99_before_us) + " ms", ms(f.p99_during_us) + " ms" + (f.p99_before_us ? " (×" + (f.p99_during_us / f.p99_before_us).toFixed(1) + ")" : ""),
        count(f.failed_after) + " of " + count(f.requests_after) + (f.requests_after ? " (" + pct(f.failed_after / f.requests_after) + ")" : ""), classes || "–"]], "num");
      if (f.instances && f.instances.length) add(box, "p", { "class": "hint" }, "Hit instance " + f.instances.join(", ") + ".");
      var ps = f.per_second || [];
      if (ps.length) {
        var xs = ps.map(function (_, i) { return i; });
        chart(box, "fault", f.variant + " step " + f.step + ": p99 (ms) and failed requests per second after the " + f.action + ", against the pre-fault limit", {
          height: 200,
          scales: { x: { time: false }, n: {} },
          axes: [{ label: "s after the fault" }, { label: "p99 ms" }, { scale: "n", side: 1, label: "failed", grid: { show: false } }],
          series: [{ label: "s" }, line("p99", colors[0]), line("limit " + ms(f.p99_limit_us) + " ms", "#999", { dash: [6, 4], points: { show: false } }),
            line("failed", colors[1], { scale: "n" })]
        }, [xs, ps.map(function (p) { return p.requests ? p.p99_us / 1000 : null; }), ps.map(function () { return f.p99_limit_us / 1000; }), ps.map(function (p) { return p.failed; })]);
      }
    });
    add(sec, "p", { "class": "hint" }, run.fault_rule + ".");
  }

  function runSection(run, what) {
    var sec = add(root, "section", { "class": "run" });
    add(sec, "h2", {}, what + " " + run.id + " — " + run.name);
    var meta = run.spec_file + " · " + run.status + (run.reason ? " (" + run.reason + ")" : "") + " · started " + run.started_at.replace("T", " ").replace("Z", " UTC");
    add(sec, "p", { "class": "meta" }, meta);
    if (run.slo) add(sec, "p", {}, "SLO: " + run.slo.text);
    (run.notes || []).forEach(function (n) { add(sec, "p", { "class": "note" }, "note: " + n); });
    var vs = run.variants || [];

    add(sec, "h3", {}, "1. Capacity at the SLO");
    if (!run.slo) add(sec, "p", {}, "Not judged: the spec has no slo block.");
    else {
      var ct = table(sec, ["variant", "capacity", "limited by", "findings near the limit"], vs.map(function (v) {
        var c = v.capacity || {}, lb = c.limited_by || [], nf = (c.findings || []).length;
        return [v.name, c.text || "–", lb.slice(0, lb.length - nf).join("; "), ""];
      }), "capacity");
      // the findings as links to their entries below, not their paragraphs
      vs.forEach(function (v, i) {
        var td = ct.tBodies[0].rows[i].cells[3];
        ((v.capacity || {}).findings || []).forEach(function (fi, k) {
          var f = run.findings[fi];
          if (k) td.appendChild(document.createTextNode(", "));
          add(td, "a", { href: "#" + findingId(run, fi) }, f.check + " (step " + f.step + ")");
        });
      });
    }

    add(sec, "h3", {}, "2. Steps");
    add(sec, "p", { "class": "hint" }, "Latency in ms from the intended send time, warm-up excluded; percentiles are observed values.");
    var rows = [];
    vs.forEach(function (v) {
      v.steps.forEach(function (s) {
        var cls = Object.keys(s.errors_by_class || {}).filter(function (k) { return s.errors_by_class[k] > 0; })
          .sort().map(function (k) { return k + " " + s.errors_by_class[k]; }).join(", ");
        rows.push([v.name, s.live ? s.step + " (running: so far)" : s.step, load(s.load), s.count, s.offered_rate ? num(s.offered_rate) : "–", num(s.throughput), ms(s.mean_us), ms(s.p50_us), ms(s.p90_us),
          ms(s.p99_us), ms(s.p999_us), ms(s.min_us), ms(s.max_us), s.errors + (cls ? " (" + cls + ")" : ""), (s.bandwidth_bytes_per_sec / 1048576).toFixed(1),
          s.missed, s.omitted, (s.meets_slo === undefined ? "" : s.meets_slo ? "meets" : "breaks: " + (s.slo_breaches || []).join(", ")) +
          (s.disturbances ? " (disturbed: " + s.disturbances.map(function (d) { return d.text; }).join(", ") + ")" : "")]);
      });
    });
    table(sec, ["variant", "step", "load", "count", "offered/s", "req/s", "mean", "p50", "p90", "p99", "p99.9", "min", "max", "errors", "MiB/s", "missed", "omitted", "SLO"], rows, "num");

    add(sec, "h3", {}, "3. Scaling");
    var withSteps = vs.filter(function (v) { return v.steps.length > 0; });
    if (withSteps.length) {
      var stepAt = function (name, n) {
        var v = withSteps.filter(function (x) { return x.name === name; })[0];
        var s = v && v.steps.filter(function (x) { return x.step === n; })[0];
        return s ? [s.load, s.throughput] : null;
      };
      chart(sec, "throughput-vs-load", "Throughput (req/s) vs load; a triangle marks a finding on its step", {
        scales: { x: { time: false, range: padded } }, axes: [loadAxis("load (" + withSteps[0].load_unit + ")", allLoads(withSteps)), { label: "req/s" }],
        series: [{ label: "load" }].concat(withSteps.map(function (v, i) { return line(v.name, colors[i % colors.length]); })),
        hooks: { draw: [findingMarkers(run.findings, stepAt)] }
      }, align(withSteps.map(function (v) { return { x: v.steps.map(function (s) { return s.load; }), y: v.steps.map(function (s) { return s.throughput; }) }; })));
      var pser = [{ label: "load" }], psets = [], k = 0;
      withSteps.forEach(function (v) {
        [["p50", "p50_us"], ["p90", "p90_us"], ["p99", "p99_us"]].forEach(function (p, j) {
          pser.push(line(v.name + " " + p[0], colors[(k++) % colors.length], { dash: j === 0 ? undefined : j === 1 ? [6, 3] : [2, 2] }));
          psets.push({ x: v.steps.map(function (s) { return s.load; }), y: v.steps.map(function (s) { return s[p[1]] / 1000; }) });
        });
      });
      chart(sec, "percentiles-vs-load", "Latency percentiles (ms, observed) vs load", { scales: { x: { time: false, range: padded } }, axes: [loadAxis("load (" + withSteps[0].load_unit + ")", allLoads(withSteps)), { label: "ms" }], series: pser }, align(psets));
    }
    var cpuVs = vs.filter(function (v) { return v.steps.some(function (s) { return s.app && s.app.cpu_total_cores !== undefined; }); });
    if (cpuVs.length) {
      // x is the throughput, which need not grow with the load: points, each labelled
      // with its step, not a line that would join them out of load order.
      var cpuSets = cpuVs.map(function (v) {
        var st = v.steps.filter(function (s) { return s.app && s.app.cpu_total_cores !== undefined; });
        var byX = {};
        st.forEach(function (s) { byX[s.throughput] = s.step; });
        return { x: st.map(function (s) { return s.throughput; }), y: st.map(function (s) { return s.app.cpu_total_cores; }), steps: byX };
      });
      chart(sec, "cpu-vs-throughput", "App CPU (cores, all instances) vs throughput (req/s), a point per step", {
        scales: { x: { time: false, range: padded }, y: { range: function (u, mn, mx) { return [0, mx * 1.1]; } } }, axes: [{ label: "req/s" }, { label: "cores" }],
        series: [{ label: "req/s" }].concat(cpuVs.map(function (v, i) {
          var c = colors[i % colors.length];
          return line(v.name, c, { fill: c, paths: uPlot.paths.points(), points: { show: false } });
        })),
        hooks: { draw: [pointLabels(cpuSets.map(function (d) { return d.steps; }))] }
      }, align(cpuSets));
    }
    rows = [];
    vs.forEach(function (v) {
      v.steps.forEach(function (s) {
        var a = s.app || {};
        // a running step's CPU available is known when it ends (the run's deployment knows the cells' cores)
        var avail = a.instances === undefined ? "–" : (a.cpu_available_cores === undefined ? (s.live ? "when it ends" : "unknown") : a.cpu_available_cores.toFixed(2)) +
            (a.cells === undefined ? " (cells unknown)" : " on " + a.cells + (a.cells === 1 ? " cell" : " cells"));
        rows.push([v.name, s.live ? s.step + " (running: so far)" : s.step, load(s.load), num(s.throughput), a.instances === undefined ? "–" : a.instances, avail, opt(a.cpu_total_cores, 2) + (a.cpu_source === "stats" ? " (sampled)" : "") +
            (a.cpu_total_cores !== undefined && a.cpu_covered < 0.995 ? " (over " + (100 * a.cpu_covered).toFixed(0) + "% of the step)" : ""),
          opt(a.throughput_per_core, 0), opt(a.throughput_per_cpu_percent, 1), a.utilisation === undefined ? "–" : pct(a.utilisation),
          s.generator ? opt(s.generator.cpu_mean_cores, 2) : "–"]);
      });
    });
    table(sec, ["variant", "step", "load", "req/s", "app instances", "CPU available (cores)", "app CPU (cores)", "req/s per core", "req/s per CPU%", "utilisation", "generator CPU/instance"], rows, "num");
    rows = [];
    vs.forEach(function (v) {
      (v.utilisation || []).forEach(function (u) {
        rows.push([v.name, u.app_instances, u.cells === undefined ? "unknown" : u.cells, u.cores_available === undefined ? "unknown" : (100 * u.cores_available).toFixed(0) + "%",
          (100 * u.cpu_max_total_cores).toFixed(0) + "%", u.utilisation === undefined ? "–" : pct(u.utilisation), u.steps.join(", ")]);
      });
    });
    if (rows.length) {
      add(sec, "p", {}, "CPU utilisation per app instance count (CPU% as cf app shows it: 100% = one core):");
      table(sec, ["variant", "app instances", "cells", "available", "used at most", "utilisation", "steps"], rows, "num");
    }
    var memVs = vs.filter(function (v) { return v.memory; });
    if (memVs.length) {
      chart(sec, "memory", "App memory per instance (MiB) over the run (s)", {
        scales: { x: { time: false } }, axes: [{ label: "s" }, { label: "MiB" }],
        series: [{ label: "s" }].concat(memVs.map(function (v, i) { return line(v.name, colors[i % colors.length], { points: { show: false } }); }))
      }, align(memVs.map(function (v) { return { x: v.memory.t, y: v.memory.mean_bytes.map(function (b) { return b / 1048576; }) }; })));
      memVs.forEach(function (v) {
        add(sec, "p", {}, "memory of " + v.name + ": " + (v.memory.settled_bytes / 1048576).toFixed(1) + " MiB per instance (the median of the run's last quarter), " +
          (v.memory.settled ? "settled" : "not settled (still moving by more than 10% in the last quarter)"));
      });
    }
    vs.forEach(function (v) {
      var s = v.series;
      if (!s || !s.t || !s.t.length) return;
      // p50 beside p99 on the latency scale; a series stored without its p50 (an old
      // export without its samples) has none to draw
      var p50 = s.p50_us && s.p50_us.length === s.t.length;
      var lat = [line("p99 ms", colors[1], { scale: "ms", points: { show: false } })], latData = [s.p99_us.map(function (x) { return x / 1000; })];
      if (p50) {
        lat.unshift(line("p50 ms", colors[2], { scale: "ms", points: { show: false } }));
        latData.unshift(s.p50_us.map(function (x) { return x / 1000; }));
      }
      var plot = chart(sec, "time", v.name + ": throughput (req/s per " + s.interval_s + " s) and " + (p50 ? "p50, p99" : "p99") + " (ms) over the run, dashed lines at step starts", {
        scales: { x: { time: false, range: function (u, mn, mx) {
          // the whole of every step, even where its first or last interval has no request
          (s.steps || []).forEach(function (w) { mn = Math.min(mn, w.start_s); if (w.end_s !== undefined && w.end_s !== null) mx = Math.max(mx, w.end_s); });
          return [mn, mx];
        } }, ms: {} },
        axes: [{ label: "s since the run's start" }, { label: "req/s" }, { scale: "ms", side: 1, label: (p50 ? "p50, p99" : "p99") + " ms", grid: { show: false } }],
        series: [{ label: "s" }, line("req/s", colors[0], { points: { show: false } })].concat(lat),
        hooks: { draw: [stepLines(s.steps || []), findingMarkers(run.findings.filter(function (f) { return f.variant === v.name; }), function (name, n) {
          // on the step's start line, at the top of the plot
          var w = (s.steps || []).filter(function (x) { return x.step === n; })[0];
          return w ? [w.start_s, null] : null;
        })] }
      }, [s.t, s.throughput].concat(latData));
      window.cfbCharts[window.cfbCharts.length - 1].steps = (s.steps || []).map(function (w) { return w.step; }); // the step markers
      return plot;
    });

    add(sec, "h3", {}, "4. Latency decomposition");
    var decVs = vs.filter(function (v) { return v.steps.some(function (s) { return s.decomposition; }); });
    if (!decVs.length) add(sec, "p", {}, "None: needs router logs and app timings of the same requests.");
    decVs.forEach(function (v) {
      var st = v.steps.filter(function (s) { return s.decomposition; });
      var names = st[0].decomposition.layers.map(function (l) { return l.name; });
      var layers = names.map(function (_, j) { return st.map(function (s) { return s.decomposition.layers[j].mean_us / 1000; }); });
      var cum = layers.map(function (_, j) { return st.map(function (_, i) { var t = 0; for (var q = 0; q <= j; q++) t += layers[q][i]; return t; }); });
      var series = [{ label: "step" }], d = [st.map(function (s) { return s.step; })];
      for (var j = names.length - 1; j >= 0; j--) {
        (function (j) {
          series.push({ label: names[j], stroke: layerColors[j], fill: layerColors[j], width: 1, points: { show: false }, paths: uPlot.paths.bars({ size: [0.6, 80] }),
            value: function (u, val, si, i) { return i === null || i === undefined ? "–" : layers[j][i].toFixed(3) + " ms"; } });
          d.push(cum[j]);
        })(j);
      }
      chart(sec, "decomposition", v.name + ": mean latency per request by layer (ms, stacked), per step", {
        scales: { x: { time: false, range: function (u, mn, mx) { return [mn - 0.5, mx + 0.5]; } }, y: { range: function (u, mn, mx) { return [0, mx * 1.05]; } } },
        axes: [{ label: "step", incrs: [1] }, { label: "ms" }], series: series
      }, d);
      table(sec, ["step", "requests", "share", "client"].concat(names).concat(["dominant"]), st.map(function (s) {
        var dd = s.decomposition;
        return [s.step, dd.requests, pct(dd.share), ms(dd.client_mean_us)].concat(dd.layers.map(function (l) { return ms(l.mean_us); })).concat([dd.dominant]);
      }), "num");
    });

    add(sec, "h3", {}, "5. Findings");
    if (!run.findings.length) add(sec, "p", {}, "None: no check tripped.");
    else {
      var ul = add(sec, "ul", { "class": "findings" });
      run.findings.forEach(function (f, i) {
        var li = add(ul, "li", { "class": f.level, id: findingId(run, i) });
        // the first sentence shows; the rest, what was judged and the evidence fold
        var m = /^(.*?[.:])(\s|$)/.exec(f.message), first = m ? m[1] : f.message;
        var det = add(li, "details");
        var sum = add(det, "summary");
        add(sum, "strong", {}, f.level + " · " + (f.variant || "run") + (f.step ? " step " + f.step : "") + " · " + f.check + ": ");
        sum.appendChild(document.createTextNode(first));
        add(det, "p", {}, f.message);
        if (f.figures) {
          add(det, "div", { "class": "hint" }, "judged: " + Object.keys(f.figures).sort().map(function (k) { return k + " " + f.figures[k]; }).join(", "));
        }
        if (f.evidence) {
          var ev = add(det, "ul");
          f.evidence.forEach(function (e) { add(ev, "li", {}, e); });
        }
      });
    }

    if (run.faults && run.faults.length) faultSection(sec, run);

    add(sec, "h3", {}, "6. Variants side by side");
    if (run.repeats && run.repeats.length) {
      add(sec, "p", {}, "Spread over the repeats (the variants ran interleaved, each repeat a variant NAME#R):");
      table(sec, ["config", "step", "repeats", "req/s min / median / max", "mean ± sd", "p99 ms min / median / max", "mean ± sd"], run.repeats.map(function (r) {
        var t = r.throughput, p = r.p99_us;
        return [r.config, r.step, t.n, num(t.min) + " / " + num(t.median) + " / " + num(t.max), num(t.mean) + " ± " + num(t.sd),
          ms(p.min) + " / " + ms(p.median) + " / " + ms(p.max), ms(p.mean) + " ± " + ms(p.sd)];
      }), "num");
    }
    var c = run.comparison;
    if (!c) add(sec, "p", {}, "One variant: nothing to compare.");
    else {
      var what = c.repeats ? "config" : "variant";
      if (c.repeats) add(sec, "p", {}, "Configurations, each the mean of its repeats; \u201cinside\u201d marks a difference within the repeats' spread (their min–max ranges overlap).");
      var spread = function (b) { return b === undefined ? "" : b ? " (inside)" : " (apart)"; };
      table(sec, [what, "capacity req/s", "× " + c.reference, "max req/s", "× " + c.reference], c.variants.map(function (v) {
        var bound = { at_least: "≥ ", at_most: "≤ " };
        return [v.variant, v.capacity === undefined ? "–" : (bound[v.capacity_bound] || "") + num(v.capacity),
          v.capacity_ratio === undefined ? "–" : (bound[v.capacity_ratio_bound] || "") + ratio(v.capacity_ratio), num(v.max_throughput), ratio(v.max_throughput_ratio)];
      }), "num");
      rows = [];
      c.variants.slice(1).forEach(function (v) {
        v.steps.forEach(function (s) {
          rows.push([v.variant, s.step, ratio(s.throughput_ratio) + spread(s.throughput_in_spread), ratio(s.mean_ratio),
            ratio(s.p99_ratio) + spread(s.p99_in_spread), ratio(s.cpu_per_request_ratio)]);
        });
      });
      if (rows.length) table(sec, [what, "step", "req/s", "mean", "p99", "app CPU per request"], rows, "num");
    }

    add(sec, "h3", {}, "7. Router-log coverage and app-timing flushes");
    if (!run.coverage || !run.coverage.length) add(sec, "p", {}, "Router logs: not pulled.");
    else {
      var covVs = [];
      if (run.router_log_source) add(sec, "p", {}, "Router logs from " + (run.router_log_source === "drain" ?
        "the run's syslog drain (every line as it happened, no pull)." : run.router_log_source + " (pulled after the run)."));
      run.coverage.forEach(function (r) { if (covVs.indexOf(r.variant) < 0) covVs.push(r.variant); });
      chart(sec, "coverage", "Router-log coverage (% of requests found) per step", {
        scales: { x: { time: false }, y: { range: [0, 100] } }, axes: [{ label: "step", incrs: [1] }, { label: "%" }],
        series: [{ label: "step" }].concat(covVs.map(function (n, i) { return line(n, colors[i % colors.length]); }))
      }, align(covVs.map(function (n) {
        var rs = run.coverage.filter(function (r) { return r.variant === n; });
        return { x: rs.map(function (r) { return r.step; }), y: rs.map(function (r) { return 100 * r.share; }) };
      })));
      table(sec, ["variant", "step", "sent", "found", "missing", "coverage", "gaps"], run.coverage.map(function (r) {
        return [r.variant, r.step, r.sent, r.found, r.missing, pct(r.share), r.verdict];
      }), "num");
    }
    if (!run.flushes || !run.flushes.length) add(sec, "p", {}, "App timings: none flushed.");
    else table(sec, ["variant", "step", "instances", "received", "stored", "foreign", "dropped", "flushes"], run.flushes.map(function (f) {
      return [f.variant, f.step, f.instances, f.rows_received, f.stored, f.foreign, f.dropped, f.verdict];
    }), "num");
  }

  function findingId(run, i) { return "finding-" + run.id + "-" + i; }

  // The headline: the answer per variant, before everything else.
  if (data.headline && data.headline.length) {
    var hl = add(root, "section", { "class": "headline", id: "headline" });
    var one = data.runs.length === 1 ? data.runs[0] : null;
    add(hl, "h2", {}, "Headline" + (one && one.slo ? " (SLO: " + one.slo.text + ")" : ""));
    data.headline.forEach(function (h) {
      var p = add(hl, "p", { "class": "headline-line", "data-run": h.run, "data-variant": h.variant });
      var cut = h.text.indexOf(": "), lim = (h.findings || []).length ? h.text.lastIndexOf("; limited by: ") : -1;
      add(p, "strong", {}, h.text.slice(0, cut + 1));
      p.appendChild(document.createTextNode(h.text.slice(cut + 1, lim < 0 ? undefined : lim + 14)));
      // the findings that limit it, as links to their entries
      var run = data.runs.filter(function (r) { return r.id === h.run; })[0];
      if (lim >= 0 && run) h.findings.forEach(function (fi, k) {
        var f = run.findings[fi];
        if (k) p.appendChild(document.createTextNode(", "));
        add(p, "a", { href: "#" + findingId(run, fi) }, f.check + " (step " + f.step + ")");
      });
    });
    add(hl, "p", { "class": "hint" }, "Details per run below: capacity, steps, scaling, latency decomposition, findings (folded: click to open), comparisons.");
  }
  data.runs.forEach(function (r) { runSection(r, "Run"); });
  if (data.baseline) {
    runSection(data.baseline, "Baseline run");
    var sec = add(root, "section", { "class": "compare" });
    add(sec, "h2", {}, "Changes against the baseline " + data.baseline.id);
    table(sec, ["run", "variant", "figure", "step", "baseline", "this run", "change"], (data.changes || []).map(function (c) {
      var f = function (x) { return c.unit === "us" ? ms(x) + " ms" : num(x) + " " + c.unit; };
      return [c.run, c.variant, c.metric, c.step || "", f(c.baseline), f(c.value), (c.change === undefined ? "–" : (c.change >= 0 ? "+" : "") + (100 * c.change).toFixed(1) + "%") + (c.lower_bound ? " (lower bound)" : "")];
    }), "num");
  }
  if (data.spread && data.spread.length) {
    var sp = add(root, "section", { "class": "compare" });
    add(sp, "h2", {}, "Run-to-run spread");
    table(sp, ["spec", "variant", "figure (req/s)", "runs", "mean", "min", "max", "CV"], data.spread.map(function (s) {
      return [s.name, s.variant, s.metric, s.values.length, num(s.mean), num(s.min), num(s.max), pct(s.cv)];
    }), "num");
  }
  if (data.thresholds && data.thresholds.length) {
    var th = add(root, "section", { "class": "compare" });
    add(th, "h2", {}, "Thresholds (--fail-on)");
    table(th, ["threshold", "verdict", "detail"], data.thresholds.map(function (t) { return [t.spec, t.failed ? "FAIL" : "ok", t.detail]; }));
  }
  document.body.setAttribute("data-rendered", String(window.cfbCharts.length));
};
(function () {
  // Printed, the folded findings are opened: paper cannot be clicked. (Once per page,
  // not per render: the live page renders every second.)
  window.addEventListener("beforeprint", function () {
    Array.prototype.forEach.call(document.querySelectorAll("ul.findings details"), function (d) { d.open = true; });
  });
  var embedded = document.getElementById("report-data");
  if (embedded) window.cfbRender(JSON.parse(embedded.textContent), document.getElementById("report"));
})();
