// The status page's script (SPEC OPS-2): it fetches the status document
// every 2 s and renders the verdict line and the tables. Served at
// /_dual-proxy/status.js; the page's CSP allows scripts from its own
// origin only (no inline script).
"use strict";
(function () {
  // A script error is shown on the page (and seen by the browser test).
  window.addEventListener("error", function (ev) {
    document.getElementById("error").textContent = "script error: " + ev.message;
  });
  // Everything is written with textContent: host names and reasons come
  // from the network and must never be parsed as HTML.
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function row(cells) {
    var tr = document.createElement("tr");
    cells.forEach(function (c) { tr.appendChild(c instanceof Node ? c : el("td", c)); });
    return tr;
  }
  function fill(id, rows, cols, emptyText) {
    var body = document.getElementById(id);
    body.textContent = "";
    if (rows.length === 0) {
      var td = el("td", emptyText, "empty");
      td.colSpan = cols;
      var tr = document.createElement("tr");
      tr.appendChild(td);
      body.appendChild(tr);
      return;
    }
    rows.forEach(function (r) { body.appendChild(r); });
  }
  function dur(ms) {
    if (ms === undefined || ms === null) return "";
    if (ms < 1000) return Math.round(ms) + " ms";
    var s = ms / 1000;
    if (s < 60) return s.toFixed(1) + " s";
    var m = Math.floor(s / 60);
    if (m < 60) return m + " m " + Math.round(s - m * 60) + " s";
    return Math.floor(m / 60) + " h " + (m % 60) + " m";
  }
  // One time format on the page: 24-hour local clock time, HH:MM:SS.
  function clock(t) {
    if (!t) return "never";
    var d = new Date(t);
    if (isNaN(d)) return "";
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
  }
  // Failure phases in words, the code beside them (SPEC CD-3).
  var PHASES = {
    "gateway-connect": "cannot connect to the gateway",
    "gateway-tls": "TLS to the https gateway failed",
    "socks-handshake": "the SOCKS5 handshake with the gateway failed",
    "connect-response": "the gateway refused the tunnel",
    "tls-probe": "TLS handshake through the path failed",
    "origin-connect": "cannot connect to the destination",
    "response-header": "no response head in time",
    "stream": "the answer broke off",
    "local": "local resource error"
  };
  var TIERS = { gateway: "cooled for all hosts", host: "cooled for that destination", none: "no cooldown" };
  function phase(p) { return (PHASES[p] || "failed") + " (" + p + ")"; }

  // Per candidate: decisions it served (latency) and its failed attempts,
  // oldest first, and since when it has been failing without a success.
  function history(st) {
    var h = {};
    function of(c) { return h[c] || (h[c] = { served: [], failed: [], since: null }); }
    st.decisions.forEach(function (d) {
      (d.failed || []).forEach(function (f) {
        var x = of(f.candidate);
        x.failed.push(d.time);
        if (!x.since) x.since = d.time;
      });
      if (d.candidate) {
        var x = of(d.candidate);
        x.served.push([d.time, d.latency_ms]);
        x.since = null;
      }
    });
    return h;
  }

  // spark is an inline SVG of the latencies served over the last 10 min
  // (a line) and the failed attempts (red dots on the baseline).
  function spark(hist, now) { // now: ms since the epoch, the chart's right edge
    var W = 140, H = 26, span = 600000, ns = "http://www.w3.org/2000/svg";
    var end = now;
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "spark");
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var pts = (hist ? hist.served : []).filter(function (p) { return end - Date.parse(p[0]) <= span; });
    var max = pts.reduce(function (m, p) { return Math.max(m, p[1]); }, 1);
    function x(t) { return Math.max(0, Math.min(W, W - (end - Date.parse(t)) / span * W)).toFixed(1); }
    var base = document.createElementNS(ns, "line");
    base.setAttribute("x1", 0); base.setAttribute("x2", W); base.setAttribute("y1", H - 1); base.setAttribute("y2", H - 1);
    base.setAttribute("stroke", "#d9dee3");
    svg.appendChild(base);
    function y(ms) { return (H - 3 - (ms / max) * (H - 7)).toFixed(1); }
    if (pts.length) {
      var line = document.createElementNS(ns, "polyline");
      line.setAttribute("points", pts.map(function (p) { return x(p[0]) + "," + y(p[1]); }).join(" "));
      svg.appendChild(line);
      pts.forEach(function (p) {
        var d = document.createElementNS(ns, "circle");
        d.setAttribute("cx", x(p[0])); d.setAttribute("cy", y(p[1])); d.setAttribute("r", 1.8);
        d.setAttribute("class", "served");
        svg.appendChild(d);
      });
    }
    var fails = (hist ? hist.failed : []).filter(function (t) { return end - Date.parse(t) <= span; });
    fails.forEach(function (t) {
      var c = document.createElementNS(ns, "circle");
      c.setAttribute("cx", x(t));
      c.setAttribute("cy", H - 3);
      c.setAttribute("r", 2);
      svg.appendChild(c);
    });
    svg.setAttribute("data-points", String(pts.length));
    svg.setAttribute("data-failures", String(fails.length));
    var title = document.createElementNS(ns, "title");
    title.textContent = pts.length ? pts.length + " requests, slowest " + dur(max) : "no requests in the last 10 minutes";
    svg.appendChild(title);
    return svg;
  }

  // shownState: the document's state (cooling, failing, untried, hot);
  // from an instance that only says hot or cooling, a candidate whose last
  // health check failed is still never shown as hot, nor one that nothing
  // proves (no success, no passing check).
  function shownState(c, healthFailed, passed) {
    if (c.state !== "hot") return c.state;
    if (healthFailed[c.candidate]) return "failing";
    return c.successes > 0 || passed[c.candidate] ? "hot" : "untried";
  }

  // verdict is the one line at the top: the serving path, how many paths
  // are proven and untried, and what fails since when.
  function verdict(st, hist, healthFailed, passed) {
    var serving = "", last = null;
    for (var i = st.decisions.length - 1; i >= 0; i--) {
      if (st.decisions[i].candidate) { serving = st.decisions[i].candidate; last = st.decisions[i].time; break; }
    }
    var failing = st.candidates.filter(function (c) {
      var s = shownState(c, healthFailed, passed);
      return s === "cooling" || s === "failing";
    });
    var healthy = st.candidates.length - failing.length;
    // proven: a success or a passing health check; the rest are untried.
    var proven = st.candidates.filter(function (c) {
      return shownState(c, healthFailed, passed) === "hot" && (c.successes > 0 || passed[c.candidate]);
    }).length;
    var parts = [];
    if (serving) {
      parts.push("Serving via " + serving + " (last request " + clock(last) + ")");
    } else {
      var first = st.candidates.filter(function (c) {
        var s = shownState(c, healthFailed, passed);
        return s === "hot" || s === "untried";
      })[0];
      parts.push(first ? "No requests yet; next path " + first.candidate : "No path available");
    }
    parts.push(proven + " of " + st.candidates.length + " paths proven" + (healthy > proven ? ", " + (healthy - proven) + " untried" : ""));
    if (st.health.target_down) {
      // The health URL failed on every path: the target, not the paths.
      parts.push("health check target " + st.health.origin + " fails on every path: the target is down or unreachable from here, not the paths; traffic judges them");
    }
    failing.forEach(function (c) {
      var f = c.last_failure, since = (hist[c.candidate] && hist[c.candidate].since) || (f && f.time) || st.health.last_run;
      var why = f ? phase(f.phase) : "health check failed";
      if (!f && healthFailed[c.candidate]) why = "health check failed: " + healthFailed[c.candidate];
      parts.push(c.candidate + " failing since " + clock(since) + ": " + why);
    });
    var level = failing.length === 0 ? (st.health.target_down ? "warn" : "ok") : (healthy > 0 && serving ? "warn" : "down");
    var lastDecision = st.decisions[st.decisions.length - 1];
    if (lastDecision && lastDecision.error) level = "down";
    var v = document.getElementById("verdict");
    v.textContent = parts.join(" · ");
    v.setAttribute("data-level", level);
    v.setAttribute("data-serving", serving);
  }

  function render(st) {
    var hist = history(st), healthFailed = {}, passed = {};
    (st.health.results || []).forEach(function (r) { if (r.alive) passed[r.candidate] = true; });
    // A target down on every path blames no path (HC-1).
    if (!st.health.target_down) {
      (st.health.results || []).forEach(function (r) { if (!r.alive) healthFailed[r.candidate] = r.reason || "failed"; });
    }
    verdict(st, hist, healthFailed, passed);
    // The charts end at the newer of the engine's clock and the last decision.
    var chartEnd = Date.parse(st.now);
    st.decisions.forEach(function (d) { chartEnd = Math.max(chartEnd, Date.parse(d.time)); });
    var meta = document.getElementById("meta");
    meta.textContent = "";
    meta.appendChild(el("span", "listening on " + (st.listeners.length ? st.listeners.join(", ") : "(engine only)")));
    meta.appendChild(el("span", "TLS probes " + st.tls_probes));
    meta.appendChild(el("span", "health runs " + st.health_runs));
    // The settings are keyed by their long flag names; 0 means off there
    // as on the command line (docs/flags.md).
    var cool = (st.settings || {})["cooldown-ms"];
    if (cool !== undefined) meta.appendChild(el("span", "cooldown " + (cool === 0 ? "off" : dur(cool))));
    meta.appendChild(el("span", "updated " + clock(st.now)));

    fill("candidates", st.candidates.map(function (c, i) {
      var shown = shownState(c, healthFailed, passed);
      var chart = el("td");
      chart.appendChild(spark(hist[c.candidate], chartEnd));
      var tr = row([
        el("td", i + 1, "num"),
        el("td", c.candidate + (c.preferred ? "  (health preferred)" : ""), "mono"),
        el("td", c.kind || "", "nowrap"),
        el("td", c.source, "nowrap"),
        el("td", shown === "failing" ? "failing (health)" : shown, "state " + shown),
        el("td", c.state === "cooling" ? dur(c.remaining_ms) : "", "num"),
        chart,
        el("td", (c.host_cooldowns || []).map(function (h) {
          return h.host + " " + dur(h.remaining_ms) + " (" + h.phase + ")";
        }).join("; ")),
        el("td", c.last_failure ? phase(c.last_failure.phase) + ", " + (TIERS[c.last_failure.tier] || c.last_failure.tier) +
          ", at " + clock(c.last_failure.time) + ": " + c.last_failure.reason : "", "reason"),
        el("td", c.successes, "num"),
        el("td", c.failures, "num")
      ]);
      tr.setAttribute("data-key", c.key);
      tr.setAttribute("data-state", c.state);
      tr.setAttribute("data-shown", shown);
      return tr;
    }), 11, "no candidates");

    var h = st.health;
    var ht = document.getElementById("health");
    ht.textContent = "";
    if (!h.enabled) {
      ht.appendChild(el("span", "off (no health URL)"));
    } else {
      ht.appendChild(el("span", "origin " + h.origin));
      ht.appendChild(el("span", "preferred " + (h.preferred || "none")));
      ht.appendChild(el("span", "last run " + clock(h.last_run)));
      ht.appendChild(el("span", "interval " + (h.interval_ms ? dur(h.interval_ms) : "off (failures kick a check)")));
      if (h.target_down) ht.appendChild(el("span", "the target fails on every path: no path is blamed for it", "fail"));
    }
    fill("health-results", h.results.map(function (r) {
      return row([el("td", r.candidate, "mono"), el("td", r.alive ? "alive" : "failed", r.alive ? "ok" : "fail"),
        el("td", r.streak, "num"), r.eligible ? "yes" : "no", el("td", r.reason || "", "reason")]);
    }), 5, "no health check has run");

    fill("cache", st.cache.map(function (c) {
      return row([el("td", c.host, "mono"), el("td", c.candidate, "mono"), el("td", dur(c.remaining_ms), "num")]);
    }), 3, "empty");

    fill("decisions", st.decisions.slice().reverse().map(function (d) {
      return row([clock(d.time), d.kind, el("td", d.host, "mono"), el("td", d.candidate || "—", "mono"),
        el("td", dur(d.latency_ms), "num"),
        el("td", (d.failed || []).map(function (f) {
          return (f.candidate || "?") + ": " + phase(f.phase || "") + (f.status ? " " + f.status : "");
        }).join("; "), "reason"),
        el("td", d.error || "", d.error ? "fail" : "")]);
    }), 7, "no requests yet");
  }

  var rendered = 0;
  function tick() {
    fetch("status", { cache: "no-store" }).then(function (resp) {
      if (!resp.ok) throw new Error("status answered " + resp.status);
      return resp.json();
    }).then(function (st) {
      render(st);
      rendered++;
      document.body.setAttribute("data-rendered", String(rendered));
      document.getElementById("error").textContent = "";
    }).catch(function (err) {
      document.getElementById("error").textContent = "cannot load status: " + err.message;
    });
  }
  // The settings form (settings/form.js) asks for a fresh status after a
  // change, so the verdict line follows it at once.
  window.dualProxyRefresh = tick;
  tick();
  setInterval(tick, 2000);
})();
