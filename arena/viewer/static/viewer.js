// The Battle Sheep viewer: renders the arena's JSON event stream (arena/viewer/stream.py),
// live over /ws or from a replay file sent to /upload. No rules here: the server sends
// every changed cell with its true count, the scores and the region sizes.
"use strict";

const $ = (id) => document.getElementById(id);
const SEATS = [1, 2, 3, 4];

let game = null; // {start, steps, end, cursor, follow, cells}
let liveSocket = null;
let chosenView = null; // the user's choice of whose counts to show in game 3

function wsUrl(path) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
}

function setStatus(text) {
  $("status").textContent = text;
}

function showError(text) {
  $("error").textContent = text;
  $("error").hidden = !text;
}

// ------------------------------------------------------------------ stream
function handle(msg, fromUpload) {
  if (msg.type === "error") {
    showError(msg.message);
    return;
  }
  if (msg.type === "start") {
    if (fromUpload) stopLive();
    showError("");
    begin(msg);
  } else if (!game) {
    return;
  } else if (msg.type === "turn") {
    addTurn(msg);
  } else if (msg.type === "end") {
    game.end = msg;
  }
  render();
}

function begin(start) {
  const n = start.size;
  const owner = new Int8Array(n * n);
  const sheep = new Int16Array(n * n);
  for (let x = 0; x < n; x++) for (let y = 0; y < n; y++) owner[x * n + y] = start.map[x][y];
  const replay = start.source === "replay";
  game = {
    start,
    steps: [{ owner, sheep, scores: [0, 0, 0, 0], regions: [[], [], [], []], toMove: 1, turn: null }],
    end: null,
    cursor: 0,
    follow: !replay,
    cells: [],
  };
  const board = $("board");
  board.replaceChildren();
  board.style.setProperty("--cell", n > 12 ? "34px" : "40px");
  board.style.gridTemplateColumns = `auto repeat(${n}, var(--cell))`;
  const axis = (cls, text) => {
    const div = document.createElement("div");
    div.className = "axis " + cls;
    div.textContent = text;
    board.appendChild(div);
  };
  // Rows are y and columns x, as in the arena's text boards (state/render.py);
  // the axes carry the numbers the move list uses.
  axis("corner", "");
  for (let x = 0; x < n; x++) axis("x", x);
  for (let y = 0; y < n; y++) {
    axis("y", y);
    for (let x = 0; x < n; x++) {
      const div = document.createElement("div");
      div.dataset.x = x;
      div.dataset.y = y;
      board.appendChild(div);
      game.cells[x * n + y] = div;
    }
  }
  $("moves").replaceChildren();
  $("follow-box").hidden = replay;
  $("follow").checked = game.follow;
  $("view-box").hidden = !start.hidden;
  $("view").value = start.hidden ? String(chosenView ?? 1) : "0";
  const where = replay ? `replay ${start.name}` : "live";
  $("title").textContent =
    `game ${start.game} · seed ${start.seed} · ${start.time_limit} s per move · ${where}`;
  buildPlayers();
}

function addTurn(turn) {
  const prev = game.steps[game.steps.length - 1];
  const n = game.start.size;
  const owner = prev.owner.slice();
  const sheep = prev.sheep.slice();
  for (const [x, y, o, c] of turn.cells) {
    owner[x * n + y] = o;
    sheep[x * n + y] = c;
  }
  game.steps.push({ owner, sheep, scores: turn.scores, regions: turn.regions, toMove: turn.to_move, turn });
  const li = document.createElement("li");
  li.dataset.n = turn.n;
  li.innerHTML = `<span class="ms">${thinkText(turn.elapsed)}</span>` + moveHtml(turn);
  li.addEventListener("click", () => setCursor(turn.n));
  $("moves").appendChild(li);
  if (game.follow) game.cursor = game.steps.length - 1;
}

// ------------------------------------------------------------- rendering
function team(seat) {
  return game.start.teams[seat - 1];
}

function swatch(seat) {
  return `<span class="swatch s${seat}"></span>`;
}

function thinkText(seconds) {
  return seconds === null || seconds === undefined ? "—" : `${Math.round(seconds * 1000)} ms`;
}

function durationText(seconds) {
  return seconds < 1 ? thinkText(seconds) : `${seconds.toFixed(1)} s`;
}

// Region sizes, largest first; a run of three or more equal sizes is written once, "1×9".
function regionsText(sizes) {
  const parts = [];
  for (let i = 0; i < sizes.length; ) {
    let j = i;
    while (j < sizes.length && sizes[j] === sizes[i]) j++;
    const run = j - i;
    if (run >= 3) parts.push(`${sizes[i]}×${run}`);
    else for (let k = 0; k < run; k++) parts.push(String(sizes[i]));
    i = j;
  }
  return parts.length ? parts.join(" + ") : "—";
}

function moveHtml(t) {
  const who = `${swatch(t.seat)}seat ${t.seat}`;
  const bad = (text) => `<span class="bad">${text}</span>`;
  if (t.kind === "place") {
    const random = t.outcome === "ok" ? "" : " " + bad(`(random cell: ${t.outcome})`);
    return `${who} places ${t.x},${t.y}${random}`;
  }
  if (t.kind === "move") {
    const to = t.to ? ` → ${t.to[0]},${t.to[1]}` : "";
    return `${who} moves ${t.split} from ${t.x},${t.y} dir ${t.dir}${to}`;
  }
  if (t.kind === "pass") return `${who} has no move`;
  return `${who} ${bad("loses the turn: " + t.outcome)}`;
}

function buildPlayers() {
  const body = $("players").tBodies[0];
  body.replaceChildren();
  for (const seat of SEATS) {
    const tr = document.createElement("tr");
    tr.dataset.seat = seat;
    tr.innerHTML =
      `<td>${swatch(seat)}${seat}</td><td>${team(seat)}</td>` +
      `<td class="score">0</td><td class="regions">—</td><td class="think">—</td>`;
    body.appendChild(tr);
  }
}

function setCursor(k) {
  if (!game) return;
  const last = game.steps.length - 1;
  game.cursor = Math.max(0, Math.min(last, k));
  game.follow = game.start.source !== "replay" && game.cursor === last;
  $("follow").checked = game.follow;
  render();
}

function render() {
  if (!game) return;
  const { start, steps, cursor } = game;
  const step = steps[cursor];
  const last = steps.length - 1;
  const view = Number($("view").value);
  const turn = step.turn;
  const n = start.size;
  const from = turn && turn.kind === "move" ? turn.x * n + turn.y : -1;
  const to = turn && turn.to ? turn.to[0] * n + turn.to[1] : -1;

  for (let i = 0; i < n * n; i++) {
    const div = game.cells[i];
    const o = step.owner[i];
    let cls = "cell";
    let text = "";
    if (o < 0) cls += " obstacle";
    else if (o === 0) cls += " free";
    else {
      cls += " o" + o;
      const hidden = view > 0 && o !== view;
      text = hidden ? "?" : String(step.sheep[i]);
      if (hidden) cls += " unknown";
    }
    if (i === from) cls += " from";
    if (i === to) cls += " to";
    div.className = cls;
    div.dataset.owner = o;
    div.textContent = text;
  }

  // Think times up to the step shown.
  const total = [0, 0, 0, 0, 0];
  const worst = [0, 0, 0, 0, 0];
  for (let k = 1; k <= cursor; k++) {
    const t = steps[k].turn;
    if (t.elapsed !== null && t.elapsed !== undefined) {
      total[t.seat] += t.elapsed;
      worst[t.seat] = Math.max(worst[t.seat], t.elapsed);
    }
  }
  for (const tr of $("players").tBodies[0].rows) {
    const seat = Number(tr.dataset.seat);
    const regions = step.regions[seat - 1];
    tr.cells[2].textContent = step.scores[seat - 1];
    tr.cells[3].textContent = regionsText(regions);
    tr.cells[4].textContent = total[seat]
      ? `${durationText(total[seat])} · max ${thinkText(worst[seat])}`
      : "—";
    tr.classList.toggle("to-move", step.toMove === seat && !(game.end && cursor === last));
  }

  const finished = game.end && cursor === last;
  let line;
  if (finished) line = "Game over" + (game.end.stalled ? " (stalled: nobody moved any more)" : "");
  else if (step.toMove) {
    const verb = cursor < 4 ? "to place" : "to move";
    line = `${swatch(step.toMove)}Seat ${step.toMove} (team ${team(step.toMove)}) ${verb}`;
  } else line = "No seat can move";
  $("turn").innerHTML = line;

  const slider = $("slider");
  slider.max = last;
  slider.value = cursor;
  $("step").textContent = `${cursor} / ${last}`;

  const list = $("moves");
  for (const li of list.children) {
    const k = Number(li.dataset.n);
    li.classList.toggle("current", k === cursor);
    li.classList.toggle("future", k > cursor);
  }
  const current = list.children[cursor - 1];
  if (current) {
    const top = current.offsetTop - list.offsetTop;
    if (top < list.scrollTop || top + current.offsetHeight > list.scrollTop + list.clientHeight) {
      list.scrollTop = top - list.clientHeight / 2;
    }
  }
  renderStandings(finished);
}

function renderStandings(finished) {
  const box = $("standings");
  box.hidden = !finished;
  if (!finished) return;
  const end = game.end;
  const pairs = game.start.game === 4;
  const order = SEATS.slice().sort((a, b) => end.ranks[a - 1] - end.ranks[b - 1] || a - b);
  const items = order.map((seat) => {
    const i = seat - 1;
    const result = pairs ? ` (pair ${end.results[i]})` : "";
    return `<li data-seat="${seat}">${swatch(seat)}seat ${seat} (team ${team(seat)}): ` +
      `<b>${end.scores[i]}</b>${result} · ${end.points[i]} pts</li>`;
  });
  box.innerHTML = `<h2>Final standings</h2><ol>${items.join("")}</ol>`;
}

// ------------------------------------------------------------ connections
function connectLive() {
  const ws = new WebSocket(wsUrl("/ws"));
  liveSocket = ws;
  ws.onopen = () => setStatus("connected");
  ws.onmessage = (e) => handle(JSON.parse(e.data), false);
  ws.onclose = () => {
    if (liveSocket !== ws) return;
    setStatus(game ? "the arena closed the stream; showing what it sent" : "no arena; retrying…");
    setTimeout(() => {
      if (liveSocket === ws) connectLive();
    }, 2000);
  };
}

function stopLive() {
  const ws = liveSocket;
  liveSocket = null;
  if (ws) ws.close();
}

function openFile(file) {
  if (!file) return;
  file.arrayBuffer().then((buf) => {
    const query = "?name=" + encodeURIComponent(file.name) + "&size=" + buf.byteLength;
    const ws = new WebSocket(wsUrl("/upload" + query));
    ws.binaryType = "arraybuffer";
    ws.onopen = () => ws.send(buf);
    ws.onmessage = (e) => handle(JSON.parse(e.data), true);
    ws.onerror = () => showError(`cannot reach the arena to read ${file.name}`);
    setStatus(`reading ${file.name}…`);
    ws.onclose = (e) => {
      if (e.code === 1009) showError(`${file.name} is too large for a replay file`);
      setStatus(liveSocket ? "connected" : `replay file ${file.name}`);
    };
  });
}

// ------------------------------------------------------------------ input
$("first").addEventListener("click", () => setCursor(0));
$("prev").addEventListener("click", () => game && setCursor(game.cursor - 1));
$("next").addEventListener("click", () => game && setCursor(game.cursor + 1));
$("last").addEventListener("click", () => game && setCursor(game.steps.length - 1));
$("slider").addEventListener("input", (e) => setCursor(Number(e.target.value)));
$("follow").addEventListener("change", (e) => {
  if (!game) return;
  game.follow = e.target.checked;
  if (game.follow) game.cursor = game.steps.length - 1;
  render();
});
$("view").addEventListener("change", (e) => {
  chosenView = Number(e.target.value);
  render();
});
$("file").addEventListener("change", (e) => openFile(e.target.files[0]));

document.addEventListener("keydown", (e) => {
  if (!game || e.target.tagName === "SELECT" || e.target.tagName === "INPUT") return;
  const moves = { ArrowLeft: -1, ArrowRight: 1 };
  if (e.key in moves) setCursor(game.cursor + moves[e.key]);
  else if (e.key === "Home") setCursor(0);
  else if (e.key === "End") setCursor(game.steps.length - 1);
  else return;
  e.preventDefault();
});

let dragDepth = 0;
window.addEventListener("dragenter", (e) => {
  e.preventDefault();
  dragDepth++;
  $("drop").hidden = false;
});
window.addEventListener("dragover", (e) => e.preventDefault());
window.addEventListener("dragleave", () => {
  if (--dragDepth <= 0) {
    dragDepth = 0;
    $("drop").hidden = true;
  }
});
window.addEventListener("drop", (e) => {
  e.preventDefault();
  dragDepth = 0;
  $("drop").hidden = true;
  openFile(e.dataTransfer && e.dataTransfer.files[0]);
});

connectLive();
