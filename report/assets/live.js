// The live page of a run (report/live.go): listens to the server-sent events at
// "events" and draws each report it receives ({report, read_s, every_s}) with
// window.cfbRender (report.js), into a new element that replaces the old one, so the
// page keeps its scroll position. The body's data-updates counts the reports drawn;
// data-final is set once the final report (or why there is none) arrived, after which
// the page stops listening.
(function () {
  "use strict";
  var status = document.getElementById("live-status");
  var current = document.getElementById("report");
  var updates = 0, final = false;

  function say(text, cls) {
    status.textContent = text;
    status.className = "live" + (cls ? " " + cls : "");
  }
  function show(data) {
    // the findings a reader unfolded stay unfolded
    var open = Array.prototype.map.call(current.querySelectorAll("ul.findings > li > details[open]"), function (d) { return d.parentNode.id; });
    var next = document.createElement("div");
    current.parentNode.insertBefore(next, current.nextSibling);
    window.cfbRender(data, next);
    open.forEach(function (id) {
      var li = id && next.querySelector("#" + CSS.escape(id));
      if (li && li.firstChild) li.firstChild.open = true;
    });
    current.parentNode.removeChild(current);
    next.id = "report";
    current = next;
  }
  function running(data) {
    var run = data.runs && data.runs[0];
    if (!run) return "";
    var live = [];
    (run.variants || []).forEach(function (v) {
      v.steps.forEach(function (s) { if (s.live) live.push(v.name + " step " + s.step); });
    });
    var n = (run.findings || []).length;
    return "run " + run.id + " " + run.status + (live.length ? " · running: " + live.join(", ") + " (figures so far)" : "") +
      " · " + n + (n === 1 ? " finding" : " findings");
  }

  function title(what, data) {
    var run = data.runs && data.runs[0];
    if (!run) return;
    document.title = what + ": " + run.name + " (run " + run.id + ")";
    document.querySelector("h1").textContent = document.title;
  }

  var es = new EventSource("events");
  es.addEventListener("report", function (e) {
    var u = JSON.parse(e.data), data = u.report;
    show(data);
    title("cf-benchmark live", data);
    updates++;
    document.body.setAttribute("data-updates", String(updates));
    var pace = u.every_s > 1.5 ? " · updated every " + Math.round(u.every_s) + " s (a read of the results database takes " +
      u.read_s.toFixed(1) + " s; the page keeps it busy at most a tenth of the time)" : "";
    say(running(data) + " · updated " + new Date().toLocaleTimeString() + pace);
  });
  es.addEventListener("waiting", function (e) { say(JSON.parse(e.data).message); });
  es.addEventListener("problem", function (e) { say(JSON.parse(e.data).message, "problem"); });
  es.addEventListener("final", function (e) {
    final = true;
    es.close();
    var d = JSON.parse(e.data);
    if (d.report) {
      show(d.report);
      title("cf-benchmark report", d.report);
    }
    say(d.message, "final");
    document.body.setAttribute("data-final", d.report ? "report" : "none");
  });
  es.onerror = function () {
    if (!final) say("lost the connection to the run; trying again (the run may have ended)", "problem");
  };
})();
