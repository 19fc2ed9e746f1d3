/* touchstone dashboard: draws the charts from the /api JSON. Data is only ever written with
   textContent or drawn on a canvas (Chart.js), never parsed as HTML. */
"use strict";

(function () {
  const PASS = "#2e7d32", FAIL = "#c62828", MAIN = "#1565c0", SOFT = "rgba(21, 101, 192, 0.35)";

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function sameOrigin(url) {
    // the templates only build paths on this origin; refuse anything else
    return typeof url === "string" && url.charAt(0) === "/" && url.charAt(1) !== "/" && url.indexOf("\\") < 0;
  }

  async function getJSON(url) {
    if (!sameOrigin(url)) throw new Error("refusing to fetch " + url);
    const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    const body = await response.json();
    if (!response.ok) throw new Error(body && body.error ? body.error : "HTTP " + response.status);
    return body;
  }

  function num(x) {
    if (x === null || x === undefined || typeof x !== "number" || !isFinite(x)) return "—";
    return Math.abs(x) >= 1000 || Number.isInteger(x) ? String(x) : x.toPrecision(3);
  }

  function failed(box, error) {
    box.replaceChildren(el("p", "error-message", "Could not load the chart: " + error.message));
    box.dataset.rendered = "error";
  }

  function chart(canvas, config) {
    if (typeof window.Chart !== "function") return null;
    config.options = Object.assign({ animation: false, responsive: true, maintainAspectRatio: false }, config.options);
    return new window.Chart(canvas, config);
  }

  function binLabel(bin, integers) {
    if (integers) return num((bin.lo + bin.hi) / 2);
    return num(bin.lo) + "–" + num(bin.hi);
  }

  function distribution(item) {
    const figure = el("figure", "chart");
    figure.dataset.metric = item.key;
    figure.appendChild(el("figcaption", "key", item.key));
    const holder = el("div", "canvas-holder");
    const canvas = el("canvas");
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", "distribution of " + item.key);
    holder.appendChild(canvas);
    figure.appendChild(holder);
    const numeric = item.bins && item.bins.length > 0;
    const labels = numeric ? item.bins.map(function (b) { return binLabel(b, item.integers); })
                           : item.labels.map(function (l) { return String(l.label); });
    const counts = numeric ? item.bins.map(function (b) { return b.count; })
                           : item.labels.map(function (l) { return l.count; });
    let note = item.n + " scored";
    if (item.n_failed) {
      const kinds = Object.keys(item.failures || {}).map(function (k) { return k + ": " + item.failures[k]; });
      note += " · " + item.n_failed + " failed" + (kinds.length ? " (" + kinds.join(", ") + ")" : "");
    }
    figure.appendChild(el("p", "note" + (item.n_failed ? " failed" : ""), note));
    return { figure: figure, canvas: canvas, labels: labels, counts: counts };
  }

  async function distributions(box) {
    const data = await getJSON(box.dataset.src);
    box.replaceChildren();
    if (!data.metrics.length) {
      box.appendChild(el("p", "empty", "No typed scores stored for this run."));
    }
    for (const item of data.metrics) {
      const d = distribution(item);
      box.appendChild(d.figure);
      chart(d.canvas, {
        type: "bar",
        data: { labels: d.labels, datasets: [{ label: "rows", data: d.counts, backgroundColor: MAIN }] },
        options: { plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
      });
    }
    box.dataset.rendered = "true";
  }

  async function trend(box) {
    const data = await getJSON(box.dataset.src);
    const points = data.points;
    box.replaceChildren();
    const holder = el("div", "canvas-holder wide");
    const canvas = el("canvas");
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", "mean of " + data.metric + " across runs");
    holder.appendChild(canvas);
    box.appendChild(holder);
    const labels = points.map(function (p) {
      return (p.monitor ? "" : (p.name ? p.name + " " : "")) + String(p.at).slice(0, 16).replace("T", " ");
    });
    const colours = points.map(function (p) { return (p.below || p.alerted) ? FAIL : MAIN; });
    const datasets = [
      { label: "mean", data: points.map(function (p) { return p.mean; }), borderColor: MAIN,
        pointBackgroundColor: colours, pointBorderColor: colours, pointRadius: 4 },
      { label: "95% low", data: points.map(function (p) { return p.ci95 ? p.ci95[0] : null; }),
        borderColor: SOFT, borderDash: [4, 4], pointRadius: 0 },
      { label: "95% high", data: points.map(function (p) { return p.ci95 ? p.ci95[1] : null; }),
        borderColor: SOFT, borderDash: [4, 4], pointRadius: 0 },
    ];
    if (points.some(function (p) { return p.threshold !== null; })) {
      datasets.push({ label: "threshold", data: points.map(function (p) { return p.threshold; }),
        borderColor: FAIL, borderDash: [8, 4], pointRadius: 0, stepped: true });
    }
    chart(canvas, { type: "line", data: { labels: labels, datasets: datasets },
                    options: { plugins: { legend: { position: "bottom" } } } });
    const alerts = points.filter(function (p) { return p.below; }).length;
    const raised = points.filter(function (p) { return p.alerted; }).length;
    box.appendChild(el("p", "note" + (alerts || raised ? " failed" : ""),
      points.length + " runs" + (alerts ? " · " + alerts + " past the threshold" : "") +
      (raised ? " · " + raised + " with monitor alerts" : "") + (alerts || raised ? " (red points)" : "")));
    box.dataset.rendered = "true";
  }

  const DRAW = { distributions: distributions, trend: trend };

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-chart]").forEach(function (box) {
      const draw = DRAW[box.dataset.chart];
      if (draw) draw(box).catch(function (error) { failed(box, error); });
    });
  });
})();
