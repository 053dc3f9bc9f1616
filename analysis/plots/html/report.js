// report.html's behaviour: the charts (ECharts; their options are the JSON in #dtnn-charts), sortable and
// filterable tables, and a self-check. Opened with #selftest, the page checks that every chart rendered and
// that a table sorts and filters, and writes what it found as JSON into #selftest-result, which the browser
// test (tests/analysis/report_browser_test.py) reads back from the DOM.
(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) { errors.push(String(e.message)); });
  var consoleError = console.error;
  console.error = function () {
    errors.push(Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };

  // Custom series draw from the data row; a series names its renderer in the JSON.
  function whisker(api, a, b, horizontal) {
    var style = api.style({ stroke: api.visual("color"), fill: null, lineWidth: 1.2 });
    var cap = 4, lines = [{ x1: a[0], y1: a[1], x2: b[0], y2: b[1] }];
    [a, b].forEach(function (p) {
      lines.push(horizontal ? { x1: p[0], y1: p[1] - cap, x2: p[0], y2: p[1] + cap }
                            : { x1: p[0] - cap, y1: p[1], x2: p[0] + cap, y2: p[1] });
    });
    return { type: "group", children: lines.map(function (s) { return { type: "line", shape: s, style: style }; }) };
  }
  var renderers = {
    errorBar: function (params, api) {  // [x, low, high]
      return whisker(api, api.coord([api.value(0), api.value(1)]), api.coord([api.value(0), api.value(2)]), false);
    },
    errorBarH: function (params, api) {  // [category, low, high]
      return whisker(api, api.coord([api.value(1), api.value(0)]), api.coord([api.value(2), api.value(0)]), true);
    },
    hbarLog: function (params, api) {  // [category, value, series, of series]: from the axis' left edge (a log
      var cs = params.coordSys;          // axis has no zero for a bar to start at)
      var p = api.coord([api.value(1), api.value(0)]), band = api.size([0, 1])[1] * 0.8;
      var h = band / Math.max(1, api.value(3)), y = p[1] - band / 2 + h * api.value(2);
      return { type: "rect", shape: { x: cs.x, y: y, width: Math.max(1, p[0] - cs.x), height: h * 0.95 },
               style: api.style() };
    },
    timelineBar: function (params, api) {  // [row, begin ms, end ms, lane, lanes, name]
      var row = api.value(0), lane = api.value(3), lanes = Math.max(1, api.value(4));
      var a = api.coord([api.value(1), row]), b = api.coord([api.value(2), row]);
      var band = api.size([0, 1])[1], h, y;
      if (lane === 0) { h = band * 0.6; y = a[1] - h / 2; }
      else { h = band * 0.25 / lanes; y = a[1] - band * 0.3 - h * lane; }
      var cs = params.coordSys;
      var rect = echarts.graphic.clipRectByRect({ x: a[0], y: y, width: Math.max(1, b[0] - a[0]), height: h },
                                                { x: cs.x, y: cs.y, width: cs.width, height: cs.height });
      return rect && { type: "rect", shape: rect, style: api.style() };
    }
  };

  var charts = [];
  function drawCharts() {
    var options = JSON.parse(document.getElementById("dtnn-charts").textContent);
    document.querySelectorAll(".chart-box").forEach(function (box) {
      var option = options[box.id];
      (option.series || []).forEach(function (s) {
        if (s.type !== "custom") return;
        if (!renderers[s.renderItem]) errors.push(box.id + ": no renderer named " + s.renderItem);
        s.renderItem = renderers[s.renderItem];
      });
      var chart = echarts.init(box, null, { renderer: "canvas" });
      chart.on("finished", function () { box.setAttribute("data-rendered", "1"); });
      chart.setOption(option);
      charts.push(chart);
    });
    window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });
  }

  // Tables: a click on a header sorts by that column (again: the other way); numbers sort as numbers (a cell's
  // data-sort holds its value); the box above filters rows holding every word typed.
  function key(td) {
    var k = td.getAttribute("data-sort");
    return k === null ? td.textContent.trim() : k;
  }
  function sortTable(table, col) {
    var th = table.tHead.rows[0].cells[col];
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var keys = rows.map(function (r) { return key(r.cells[col]); });
    var numeric = keys.every(function (k) { return k === "" || k === "-" || !isNaN(Number(k)); });
    var order = rows.map(function (r, i) { return i; });
    order.sort(function (i, j) {
      var a = keys[i], b = keys[j], c;
      if (numeric) {
        var x = a === "" || a === "-" ? Infinity : Number(a), y = b === "" || b === "-" ? Infinity : Number(b);
        c = x === y ? 0 : (x < y ? -1 : 1);
      } else {
        c = a.localeCompare(b, undefined, { numeric: true });
      }
      return c * dir || i - j;
    });
    order.forEach(function (i) { body.appendChild(rows[i]); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
  }
  function filterTable(table, text) {
    var words = text.toLowerCase().split(/\s+/).filter(Boolean), shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      var t = r.textContent.toLowerCase();
      var keep = words.every(function (w) { return t.indexOf(w) >= 0; });
      r.hidden = !keep;
      shown += keep ? 1 : 0;
    });
    table.parentNode.querySelector(".count").textContent = shown + " of " + table.tBodies[0].rows.length + " rows";
  }
  function wireTables() {
    document.querySelectorAll("table.data").forEach(function (table) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
        th.addEventListener("click", function () { sortTable(table, col); });
      });
      var box = table.parentNode.querySelector("input.filter");
      box.addEventListener("input", function () { filterTable(table, box.value); });
    });
  }

  function selfCheck() {
    var boxes = document.querySelectorAll(".chart-box");
    var rendered = Array.prototype.filter.call(boxes, function (b) {
      var c = b.querySelector("canvas");
      return b.getAttribute("data-rendered") === "1" && c && c.width > 0 && c.height > 0;
    });
    var result = { charts: boxes.length, rendered: rendered.length,
                   not_rendered: Array.prototype.filter.call(boxes, function (b) { return rendered.indexOf(b) < 0; })
                                   .map(function (b) { return b.id; }),
                   tables: document.querySelectorAll("table.data").length, sorted: null, filtered: null };
    var table = Array.prototype.find.call(document.querySelectorAll("table.data"), function (t) {
      return t.tBodies[0].rows.length >= 2;
    });
    if (table) {
      var col = table.tHead.rows[0].cells.length - 1;
      table.tHead.rows[0].cells[col].click();
      var up = Array.prototype.map.call(table.tBodies[0].rows, function (r) { return key(r.cells[col]); });
      table.tHead.rows[0].cells[col].click();
      var down = Array.prototype.map.call(table.tBodies[0].rows, function (r) { return key(r.cells[col]); });
      result.sorted = { table: table.id, column: col, ascending: up, descending: down };
      var word = key(table.tBodies[0].rows[0].cells[0]);
      var box = table.parentNode.querySelector("input.filter");
      box.value = word;
      box.dispatchEvent(new Event("input"));
      result.filtered = { word: word, shown: Array.prototype.filter.call(table.tBodies[0].rows, function (r) {
        return !r.hidden; }).length, rows: table.tBodies[0].rows.length };
    }
    result.errors = errors;
    var out = document.getElementById("selftest-result");
    out.textContent = JSON.stringify(result);
    out.setAttribute("data-done", "1");
  }

  function whenRendered(then) {
    var waited = 0;
    (function poll() {
      var left = document.querySelectorAll(".chart-box:not([data-rendered])").length;
      if (left === 0 || waited >= 10000) return then();
      waited += 50;
      setTimeout(poll, 50);
    })();
  }

  try {
    drawCharts();
  } catch (e) {
    errors.push("charts: " + e);
  }
  wireTables();
  if (location.hash === "#selftest") whenRendered(selfCheck);
})();
