/* touchstone annotation page: loads the annotator's items (in their own order, blinded), shows one
   at a time, and posts each answer. Data is only ever written with textContent. Keyboard: 1-5 rate
   (Likert), a / b / t choose (pairwise), up / down pick a dimension, n / p next and previous. */
"use strict";

(function () {
  const root = document.getElementById("annotate");
  if (!root) return;
  const taskId = root.dataset.task;
  const annotator = root.dataset.annotator;
  const kind = root.dataset.kind;
  const api = "/api/annotate/" + encodeURIComponent(taskId);
  const CHOICES = { a: "A is better", b: "B is better", tie: "Tie" };

  const state = { items: [], answers: {}, dimensions: [], pos: 0, dim: 0, progress: null, busy: false };

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function status(text, isError) {
    const box = document.getElementById("status");
    box.textContent = text;
    box.className = isError ? "status error-message" : "status";
  }

  function current() { return state.items[state.pos]; }

  function answersOf(item) { return state.answers[String(item.item)] || {}; }

  function firstOpenDimension(item) {
    const given = answersOf(item);
    const open = state.dimensions.findIndex(function (d) { return given[d] === undefined; });
    return open < 0 ? 0 : open;
  }

  function showProgress() {
    const p = state.progress;
    const text = "Item " + (state.pos + 1) + " of " + state.items.length +
      (p ? " · " + p.done + " of " + p.total + " done" : "");
    document.getElementById("progress").textContent = text;
    root.dataset.done = p ? String(p.done) : "0";
  }

  function renderResponses(item) {
    const box = document.getElementById("responses");
    box.replaceChildren();
    item.responses.forEach(function (r) {
      const card = el("article", "response");
      card.appendChild(el("h2", null, r.slot ? "Response " + r.slot : "Response"));
      const text = el("pre", "text response-text", r.text);
      if (r.slot) text.dataset.slot = r.slot;
      card.appendChild(text);
      box.appendChild(card);
    });
  }

  function optionButton(dimension, value, label, chosen) {
    const button = el("button", "option" + (chosen ? " chosen" : ""), label);
    button.type = "button";
    button.dataset.dimension = dimension;
    button.dataset.value = String(value);
    button.setAttribute("aria-pressed", chosen ? "true" : "false");
    button.addEventListener("click", function () {
      state.dim = state.dimensions.indexOf(dimension);
      answer(value);
    });
    return button;
  }

  function renderAnswer(item) {
    const box = document.getElementById("answer");
    box.replaceChildren();
    const given = answersOf(item);
    state.dimensions.forEach(function (d, i) {
      const row = el("div", "dimension" + (i === state.dim ? " active" : ""));
      row.dataset.dimension = d;
      row.appendChild(el("span", "dimension-name", d));
      const values = kind === "pairwise" ? ["a", "b", "tie"] : [1, 2, 3, 4, 5];
      values.forEach(function (v) {
        const label = kind === "pairwise" ? CHOICES[v] + " (" + (v === "tie" ? "t" : v) + ")" : String(v);
        row.appendChild(optionButton(d, v, label, given[d] === v));
      });
      box.appendChild(row);
    });
  }

  function render() {
    const item = current();
    if (!item) {
      document.getElementById("progress").textContent = "This task has no items.";
      return;
    }
    root.dataset.item = String(item.item);
    document.getElementById("query").textContent = item.query;
    document.getElementById("context").textContent = item.context;
    document.getElementById("context-box").hidden = !item.context;
    renderResponses(item);
    renderAnswer(item);
    showProgress();
  }

  function move(step) {
    const next = state.pos + step;
    if (next < 0 || next >= state.items.length) {
      status(next < 0 ? "This is the first item." : "This is the last item.", false);
      return;
    }
    state.pos = next;
    state.dim = firstOpenDimension(current());
    status("", false);
    render();
  }

  async function answer(value) {
    const item = current();
    if (!item || state.busy) return;
    const dimension = state.dimensions[state.dim];
    state.busy = true;
    try {
      const response = await fetch(api + "/answers", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ annotator: annotator, answers: [{ item: item.item, dimension: dimension, value: value }] }),
      });
      const body = await response.json();
      if (!response.ok) throw new Error(body && body.error ? body.error : "HTTP " + response.status);
      const given = answersOf(item);
      given[dimension] = value;
      state.answers[String(item.item)] = given;
      state.progress = body.progress;
      root.dataset.saved = String(Number(root.dataset.saved || "0") + 1);
      status("Saved " + dimension + ".", false);
      const open = state.dimensions.findIndex(function (d) { return given[d] === undefined; });
      if (open >= 0) {
        state.dim = open;
        render();
      } else if (state.pos + 1 < state.items.length) {
        move(1);
      } else {
        render();
        status(state.progress && state.progress.done === state.progress.total ?
          "All items done — thank you." : "Saved. Some items still need an answer.", false);
      }
    } catch (error) {
      status("Could not save: " + error.message, true);
    } finally {
      state.busy = false;
    }
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA")) return;
    const key = event.key.toLowerCase();
    if (key === "n" || key === "arrowright") { move(1); }
    else if (key === "p" || key === "arrowleft") { move(-1); }
    else if (key === "arrowdown") { state.dim = Math.min(state.dim + 1, state.dimensions.length - 1); render(); }
    else if (key === "arrowup") { state.dim = Math.max(state.dim - 1, 0); render(); }
    else if (kind === "likert" && /^[1-5]$/.test(key)) { answer(Number(key)); }
    else if (kind === "pairwise" && (key === "a" || key === "b")) { answer(key); }
    else if (kind === "pairwise" && key === "t") { answer("tie"); }
    else { return; }
    event.preventDefault();
  }

  async function load() {
    try {
      const response = await fetch(api + "?annotator=" + encodeURIComponent(annotator),
        { headers: { Accept: "application/json" }, credentials: "same-origin" });
      const body = await response.json();
      if (!response.ok) throw new Error(body && body.error ? body.error : "HTTP " + response.status);
      state.items = body.items;
      state.answers = body.answers || {};
      state.dimensions = body.task.dimensions;
      state.progress = body.progress;
      state.pos = Math.min(body.progress.resume, Math.max(state.items.length - 1, 0));
      state.dim = state.items.length ? firstOpenDimension(current()) : 0;
      render();
      root.dataset.ready = "true";
    } catch (error) {
      status("Could not load the task: " + error.message, true);
    }
  }

  document.getElementById("next").addEventListener("click", function () { move(1); });
  document.getElementById("prev").addEventListener("click", function () { move(-1); });
  document.addEventListener("keydown", onKey);
  load();
})();
