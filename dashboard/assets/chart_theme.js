/* queuelens: Plotly charts in the page's theme.

   The figures are built on the server in light colours (dashboard/figures.py base_figure:
   white paper, the plotly_white template). In the dark theme (<html data-theme="dark">, see
   theme.js) every drawn chart (.js-plotly-plot) is redrawn (Plotly.react) with a copy of its
   layout in dark colours: paper and plot background, text, axis lines, grid and zero lines,
   hover label, the mode bar; switching back redraws it with the figure's own values.
   Annotations that carry their own text colour keep their hue but are moved towards white
   (dark) or black (light) until they reach 4.5:1 (WCAG AA) against the paper — in both
   themes, since the palette's green, orange and vermillion are below 4.5:1 on white too.

   A chart is styled when it is first drawn, after every redraw (a callback's new figure is
   a new layout object) and on every theme change ("queuelens:theme"). */
(function () {
  "use strict";
  var MIN_CONTRAST = 4.5;
  var DARK = {
    paper: "#1f242b",      // = --ql-card of the dark theme: the chart is its card
    text: "#e7eaee",
    grid: "#353c46",
    axis: "#8a94a0",
    zero: "#4d5560",
    modebar: "rgba(31, 36, 43, 0.6)",
    modebarIcon: "rgba(231, 234, 238, 0.45)",
    modebarActive: "rgba(231, 234, 238, 0.9)"
  };
  var root = document.documentElement;
  var canvas = document.createElement("canvas").getContext("2d");

  function rgb(color) {
    // any CSS colour -> [r, g, b] (0-255), via the canvas' own parser; null if unparseable
    if (typeof color !== "string" || !canvas) { return null; }
    canvas.fillStyle = "#010203";
    canvas.fillStyle = color;
    var value = canvas.fillStyle;
    if (value === "#010203" && color.replace(/\s/g, "").toLowerCase() !== "#010203") {
      return null;
    }
    if (value.charAt(0) === "#") {
      return [1, 3, 5].map(function (i) { return parseInt(value.substr(i, 2), 16); });
    }
    var parts = value.match(/[\d.]+/g);
    return parts ? parts.slice(0, 3).map(Number) : null;
  }

  function luminance(c) {  // WCAG 2 relative luminance
    var lin = c.map(function (v) {
      v /= 255;
      return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  }

  function contrast(a, b) {
    var la = luminance(a), lb = luminance(b);
    return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
  }

  function hex(c) {
    return "#" + c.map(function (v) {
      return ("0" + Math.round(v).toString(16)).slice(-2);
    }).join("");
  }

  /* colour, or the least mix of it with white/black that reads at MIN_CONTRAST on bg */
  function readable(color, bg) {
    var c = rgb(color), b = rgb(bg);
    if (!c || !b || contrast(c, b) >= MIN_CONTRAST) { return color; }
    var target = luminance(b) < 0.18 ? [255, 255, 255] : [0, 0, 0];
    for (var step = 1; step <= 20; step++) {
      var t = step / 20;
      var mixed = c.map(function (v, i) { return v + (target[i] - v) * t; });
      if (contrast(mixed, b) >= MIN_CONTRAST) { return hex(mixed); }
    }
    return hex(target);
  }

  function keysOf(path) {  // "annotations[2].font.color" -> ["annotations", "2", "font", "color"]
    return path.replace(/\[(\d+)\]/g, ".$1").split(".");
  }

  function get(obj, path) {
    var keys = keysOf(path);
    for (var i = 0; i < keys.length && obj !== undefined && obj !== null; i++) {
      obj = obj[keys[i]];
    }
    return obj;
  }

  function copy(value) {
    if (Array.isArray(value)) { return value.slice(); }
    var out = {};
    if (value && typeof value === "object") {
      for (var k in value) { out[k] = value[k]; }
    }
    return out;
  }

  /* set path in target (a shallow copy of the figure's layout), copying each object on the
     way instead of changing it: the figure Dash holds is never written to */
  function put(target, path, value) {
    var keys = keysOf(path);
    var obj = target;
    for (var i = 0; i < keys.length - 1; i++) {
      obj[keys[i]] = copy(obj[keys[i]]);
      obj = obj[keys[i]];
    }
    if (value === undefined || value === null) {
      delete obj[keys[keys.length - 1]];
    } else {
      obj[keys[keys.length - 1]] = value;
    }
  }

  function axes(gd) {
    return Object.keys(gd._fullLayout).filter(function (k) { return /^[xy]axis\d*$/.test(k); });
  }

  function darkValues(gd) {
    var v = {
      "paper_bgcolor": DARK.paper, "plot_bgcolor": DARK.paper, "font.color": DARK.text,
      "title.font.color": DARK.text, "legend.font.color": DARK.text,
      "legend.bgcolor": "rgba(0, 0, 0, 0)", "hoverlabel.bgcolor": DARK.paper,
      "hoverlabel.font.color": DARK.text, "hoverlabel.bordercolor": DARK.axis,
      "modebar.bgcolor": DARK.modebar, "modebar.color": DARK.modebarIcon,
      "modebar.activecolor": DARK.modebarActive
    };
    axes(gd).forEach(function (ax) {
      v[ax + ".gridcolor"] = DARK.grid;
      v[ax + ".linecolor"] = DARK.axis;
      v[ax + ".zerolinecolor"] = DARK.zero;
      v[ax + ".tickcolor"] = DARK.axis;
    });
    return v;
  }

  var own = new WeakMap();    // layouts made here -> the theme they carry
  var plain = new WeakMap();  // Dash's layouts that needed nothing in a theme -> that theme

  function style(gd) {
    var layout = gd.layout;
    if (!layout || !gd._fullLayout || !window.Plotly) { return; }
    var theme = root.getAttribute("data-theme") === "dark" ? "dark" : "light";
    if (own.has(layout)) {
      if (own.get(layout) === theme) { return; }
    } else {
      if (plain.get(layout) === theme) { return; }
      gd._qlSource = layout;  // a figure as Dash drew it
    }
    var source = gd._qlSource;
    if (!source) { return; }
    var original = gd._qlOriginal || (gd._qlOriginal = {});  // path -> the figure's value
    var written = gd._qlWritten || (gd._qlWritten = {});     // path -> the value set here
    // The figure's own value of a path. When a zoom is written back into Dash's figure it
    // carries the colours set here; those are not the figure's: keep the one seen before.
    function figureValue(path) {
      var value = get(source, path);
      if (!(path in original) || !(path in written) || value !== written[path]) {
        original[path] = value;
      }
      return original[path];
    }
    var values = theme === "dark" ? darkValues(gd) : {};
    var path;
    for (path in values) { figureValue(path); }
    if (theme === "light") {
      for (path in original) { values[path] = figureValue(path); }
    }
    var paper = theme === "dark" ? DARK.paper : (figureValue("paper_bgcolor") || "#ffffff");
    (source.annotations || []).forEach(function (note, i) {
      var notePath = "annotations[" + i + "].font.color";
      var colour = figureValue(notePath);
      if (typeof colour === "string") { values[notePath] = readable(colour, paper); }
      // a label written on the paper's colour (figures.LABEL_BACKGROUND) keeps to the paper
      var backPath = "annotations[" + i + "].bgcolor";
      var back = figureValue(backPath);
      if (typeof back === "string") { values[backPath] = theme === "dark" ? DARK.paper : back; }
    });
    var changes = Object.keys(values).filter(function (p) { return get(source, p) !== values[p]; });
    if (changes.length === 0 && layout === source) {
      plain.set(layout, theme);
      return;
    }
    var target = copy(source);
    changes.forEach(function (p) { put(target, p, values[p]); });
    Object.keys(values).forEach(function (p) { written[p] = values[p]; });
    own.set(target, theme);
    try {
      // react, not relayout: a relayout event would make Dash write these colours back
      // into the figure it holds (dcc.Graph keeps its figure in step with zooms)
      var done = window.Plotly.react(gd, gd.data, target);
      if (done && done.catch) { done.catch(function () { own.delete(target); }); }
    } catch (e) {
      own.delete(target);  // not drawable now: try again at the next scan
    }
  }

  var pending = false;
  function scan() {
    pending = false;
    var charts = document.querySelectorAll(".js-plotly-plot");
    for (var i = 0; i < charts.length; i++) {
      var gd = charts[i];
      if (!gd._qlThemeHook && typeof gd.on === "function") {
        gd._qlThemeHook = true;
        gd.on("plotly_afterplot", schedule);  // a callback's new figure, a resize...
      }
      style(gd);
    }
  }
  function schedule() {
    if (!pending) {
      pending = true;
      window.requestAnimationFrame(scan);
    }
  }

  document.addEventListener("queuelens:theme", schedule);
  var watch = function () {
    new MutationObserver(schedule).observe(document.body, {childList: true, subtree: true});
    schedule();
  };
  if (document.body) { watch(); } else { document.addEventListener("DOMContentLoaded", watch); }
})();
