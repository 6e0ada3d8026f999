(function () {
  "use strict";
  var errors = 0;
  window.addEventListener("error", function () { errors++; });
  window.addEventListener("unhandledrejection", function () { errors++; });
  var CATS = ["gemm", "conv", "attention", "elementwise", "reduction", "norm", "memcpy", "memset", "communication", "triton", "other"];
  var names = [];
  var list = document.getElementById("names");
  if (list) {
    for (var i = 0; i < list.children.length; i++) names.push(list.children[i].textContent);
  }
  function fmt(us) {
    var a = Math.abs(us);
    if (a === 0) return "0";
    if (a < 1) return (us * 1000).toFixed(0) + " ns";
    if (a < 1000) return us.toFixed(1) + " \u00b5s";
    if (a < 1e6) return (us / 1000).toFixed(2) + " ms";
    return (us / 1e6).toFixed(2) + " s";
  }
  function lines(el) {
    var d = el.dataset, out = [];
    var m = /(?:^| )k(\d+)(?: |$)/.exec(el.getAttribute("class") || "");
    if (d.n !== undefined) out.push((d.c ? "longest: " : "") + (names[+d.n] || ""));
    if (m && d.c) {
      out.unshift(d.c + " events merged, mostly " + CATS[+m[1]]);
      out.push("busy " + fmt(+d.b) + " of " + fmt(+d.d) + ", from +" + fmt(+d.s) + " in the step");
    } else if (m) {
      out.push(CATS[+m[1]] + " \u00b7 " + fmt(+d.d) + " \u00b7 at +" + fmt(+d.s) + " in the step");
    }
    if (el.getAttribute("class") === "gap") out.push("GPU idle " + fmt(+d.d) + " \u00b7 at +" + fmt(+d.s) + " in the step");
    if (d.tip) out.push(d.tip);
    return out;
  }
  var tip = document.getElementById("tip");
  document.addEventListener("mousemove", function (e) {
    var el = e.target && e.target.closest ? e.target.closest("[data-tip],[data-n],rect.gap") : null;
    if (!el) { tip.hidden = true; return; }
    tip.textContent = "";
    lines(el).forEach(function (t, i) {
      var div = document.createElement("div");
      if (i === 0) div.className = "t0";
      div.textContent = t;
      tip.appendChild(div);
    });
    tip.hidden = false;
    var x = e.clientX + 14, y = e.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 8) x = Math.max(8, e.clientX - tip.offsetWidth - 14);
    if (y + tip.offsetHeight > window.innerHeight - 8) y = Math.max(8, e.clientY - tip.offsetHeight - 14);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  });
  document.addEventListener("mouseleave", function () { tip.hidden = true; });
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var ths = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths, function (th, col) {
      th.tabIndex = 0;
      function sort() {
        var numeric = th.getAttribute("data-type") === "num";
        var cur = th.getAttribute("aria-sort");
        var asc = cur ? cur === "descending" : !numeric;
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col], r;
          if (numeric) {
            var vx = parseFloat(x.getAttribute("data-v")), vy = parseFloat(y.getAttribute("data-v"));
            if (isNaN(vx)) vx = -Infinity;
            if (isNaN(vy)) vy = -Infinity;
            r = vx === vy ? 0 : (vx < vy ? -1 : 1);
          } else {
            r = x.textContent.localeCompare(y.textContent);
          }
          return asc ? r : -r;
        });
        rows.forEach(function (r) { body.appendChild(r); });
        Array.prototype.forEach.call(ths, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  });
  var SVGNS = "http://www.w3.org/2000/svg";
  var timelines = Array.prototype.slice.call(document.querySelectorAll("svg.timeline"));
  function niceStep(range) {
    var raw = range / 8, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  }
  function tickLabel(v, step) {
    var div = step >= 1e5 ? 1e6 : step >= 100 ? 1e3 : step >= 0.1 ? 1 : 1e-3;
    var unit = step >= 1e5 ? "s" : step >= 100 ? "ms" : step >= 0.1 ? "\u00b5s" : "ns";
    var s = step / div, dec = s >= 1 ? 0 : Math.ceil(-Math.log10(s) - 1e-9);
    return Math.abs(v) < step / 1e6 ? "0" : (v / div).toFixed(dec) + " " + unit;
  }
  function layout(svg, z0, z1) {
    var x0 = +svg.getAttribute("data-x0"), pw = +svg.getAttribute("data-pw");
    var k = pw / (z1 - z0);
    Array.prototype.forEach.call(svg.querySelectorAll("[data-s]"), function (el) {
      var x = x0 + (+el.getAttribute("data-s") - z0) * k;
      var d = +(el.getAttribute("data-d") || 0);
      var cls = el.getAttribute("class") || "";
      if (el.tagName === "line") {
        el.setAttribute("x1", x.toFixed(2));
        el.setAttribute("x2", x.toFixed(2));
        return;
      }
      var min = cls === "hit" ? 4 : cls === "dsync" ? 1.5 : 0.4;
      el.setAttribute("x", (cls === "hit" ? x - 2 : x).toFixed(2));
      el.setAttribute("width", Math.max(d * k, min).toFixed(2));
    });
    var band = svg.querySelector("path.band");
    if (band) {
      var y = band.getAttribute("data-y"), h = band.getAttribute("data-h"), path = "";
      Array.prototype.forEach.call(svg.querySelectorAll("rect.gap"), function (g) {
        var gx = +g.getAttribute("x"), gw = +g.getAttribute("width");
        if (gx + gw < x0 || gx > x0 + pw) return;
        path += "M" + gx.toFixed(2) + " " + y + "h" + gw.toFixed(2) + "v" + h + "h-" + gw.toFixed(2) + "z";
      });
      band.setAttribute("d", path);
    }
    var ticks = svg.querySelector("g.ticks");
    var y0 = ticks.getAttribute("data-y0"), y1 = ticks.getAttribute("data-y1");
    while (ticks.firstChild) ticks.removeChild(ticks.firstChild);
    var step = niceStep(z1 - z0);
    for (var v = Math.ceil(z0 / step) * step; v <= z1 + step * 1e-6; v += step) {
      var x = (x0 + (v - z0) * k).toFixed(2);
      var line = document.createElementNS(SVGNS, "line");
      line.setAttribute("class", "grid");
      line.setAttribute("x1", x); line.setAttribute("x2", x);
      line.setAttribute("y1", y0); line.setAttribute("y2", y1);
      var text = document.createElementNS(SVGNS, "text");
      text.setAttribute("class", "m");
      text.setAttribute("x", x); text.setAttribute("y", "14");
      text.setAttribute("text-anchor", "middle");
      text.textContent = tickLabel(v, step);
      ticks.appendChild(line);
      ticks.appendChild(text);
    }
  }
  var zoomInfo = document.getElementById("zoominfo");
  function zoom(z0, z1) {
    var range = +timelines[0].getAttribute("data-range");
    var whole = z0 <= 0 && z1 >= range;
    timelines.forEach(function (svg) { layout(svg, z0, z1); svg.setAttribute("data-z0", z0); svg.setAttribute("data-z1", z1); });
    if (zoomInfo) {
      zoomInfo.hidden = whole;
      zoomInfo.firstChild.textContent = "Showing +" + fmt(z0) + " to +" + fmt(z1) + " of the step.";
    }
  }
  function svgX(svg, e) {
    var pt = svg.createSVGPoint();
    pt.x = e.clientX; pt.y = e.clientY;
    return pt.matrixTransform(svg.getScreenCTM().inverse()).x;
  }
  var drag = null;
  timelines.forEach(function (svg) {
    svg.addEventListener("mousedown", function (e) {
      var x0 = +svg.getAttribute("data-x0"), pw = +svg.getAttribute("data-pw");
      var x = svgX(svg, e);
      if (x < x0 || x > x0 + pw || e.button !== 0) return;
      e.preventDefault();
      var sel = document.createElementNS(SVGNS, "rect");
      sel.setAttribute("class", "sel");
      sel.setAttribute("x", x); sel.setAttribute("y", "18");
      sel.setAttribute("width", "0");
      sel.setAttribute("height", Math.max(0, svg.viewBox.baseVal.height - 20));
      svg.appendChild(sel);
      drag = { svg: svg, x: x, sel: sel };
    });
    svg.addEventListener("dblclick", function () { zoom(0, +svg.getAttribute("data-range")); });
  });
  document.addEventListener("mousemove", function (e) {
    if (!drag) return;
    var x0 = +drag.svg.getAttribute("data-x0"), pw = +drag.svg.getAttribute("data-pw");
    var x = Math.min(Math.max(svgX(drag.svg, e), x0), x0 + pw);
    drag.sel.setAttribute("x", Math.min(x, drag.x));
    drag.sel.setAttribute("width", Math.abs(x - drag.x));
  });
  document.addEventListener("mouseup", function (e) {
    if (!drag) return;
    var svg = drag.svg, x0 = +svg.getAttribute("data-x0"), pw = +svg.getAttribute("data-pw");
    var x = Math.min(Math.max(svgX(svg, e), x0), x0 + pw);
    svg.removeChild(drag.sel);
    var a = Math.min(x, drag.x), b = Math.max(x, drag.x);
    drag = null;
    if (b - a < 3) return;
    var range = +svg.getAttribute("data-range");
    var z0 = svg.hasAttribute("data-z0") ? +svg.getAttribute("data-z0") : 0;
    var z1 = svg.hasAttribute("data-z1") ? +svg.getAttribute("data-z1") : range;
    var k = (z1 - z0) / pw;
    zoom(z0 + (a - x0) * k, z0 + (b - x0) * k);
  });
  var reset = document.getElementById("zoomreset");
  if (reset) reset.addEventListener("click", function () { zoom(0, +timelines[0].getAttribute("data-range")); });
  window.addEventListener("load", function () {
    var parts = [], total = 0;
    Array.prototype.forEach.call(document.querySelectorAll("svg[data-chart]"), function (svg) {
      var n = 0;
      Array.prototype.forEach.call(svg.querySelectorAll("rect"), function (r) {
        var b = r.getBoundingClientRect();
        if (b.width > 0 && b.height > 0) n++;
      });
      total += n;
      parts.push(svg.getAttribute("data-chart") + ":" + n);
    });
    var res = performance.getEntriesByType ? performance.getEntriesByType("resource").length : -1;
    document.body.setAttribute("data-selfcheck",
      "errors=" + errors + " resources=" + res + " shapes=" + total + " charts=" + parts.join(","));
  });
})();
