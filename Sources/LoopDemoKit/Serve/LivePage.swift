import LoopKitNet

/// The page `LoopDemo serve` answers at `GET /`: one self-contained HTML file (no build step, no external
/// asset) where a person starts `/work`-style jobs on the server's loop, watches a progress bar per job
/// fed by server-sent events (`/jobs/ID/events`), cancels a job, and sees the round-trip time of `/hello`
/// stay in milliseconds while the jobs run.
///
/// A browser opens at most six HTTP/1.1 connections to one host: the page runs at most four jobs at once,
/// so that their event streams leave room for the `/hello` probe and the requests that start and cancel
/// jobs.
///
/// `/?items=N` opens the page with N in its "Items per job" field (`/?start=2&items=N` also starts two such
/// jobs): the field always shows the count the page's jobs run.
enum LivePage {
    /// The "Items per job" field's value when the page is opened without a valid `?items=`.
    static let defaultItems = 3_000_000
    /// The counts the field accepts (its `min` and `max`).
    static let itemsRange = 1...100_000_000

    /// The page, with `items` in its "Items per job" field.
    static func html(items: Int) -> Bytes {
        Bytes(beforeItems + Array(String(items).utf8) + afterItems)
    }

    /// The field's value for a page opened with `?items=` `query` (nil: none): the count when it is a whole
    /// number in ``itemsRange``, ``defaultItems`` otherwise.
    static func itemsPerJob(query: Substring?) -> Int {
        guard let items = query.flatMap({ Int($0) }), itemsRange.contains(items) else { return defaultItems }
        return items
    }

    /// The page's bytes before and after the field's value (``itemsPlaceholder`` in ``text``).
    private static let (beforeItems, afterItems): ([UInt8], [UInt8]) = {
        let bytes = Array(text.utf8), placeholder = Array(itemsPlaceholder.utf8)
        let start = bytes.indices.first { bytes[$0...].starts(with: placeholder) }!
        return (Array(bytes[..<start]), Array(bytes[(start + placeholder.count)...]))
    }()

    private static let itemsPlaceholder = "{{items}}"

    static let text = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>LoopKit: heavy jobs, a responsive loop</title>
<link rel="icon" href="data:,">
<style>
  :root { font-family: system-ui, sans-serif; color: #1d2330; background: #f6f7f9; }
  body { max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
  h1 { font-size: 1.4rem; margin-bottom: .2rem; }
  p.lead { margin-top: 0; color: #556; }
  section { background: #fff; border: 1px solid #dde1e7; border-radius: 8px; padding: 1rem; margin: 1rem 0; }
  label { margin-right: .6rem; }
  input { width: 8rem; }
  button { font: inherit; padding: .25rem .8rem; border-radius: 6px; border: 1px solid #8899aa; background: #eef2f7; cursor: pointer; }
  button:disabled { opacity: .5; cursor: default; }
  .job { display: grid; grid-template-columns: 4.5rem 1fr 3rem 5.5rem; gap: .6rem; align-items: center; margin: .5rem 0; }
  .bar { height: 1rem; background: #e6e9ee; border-radius: 4px; overflow: hidden; }
  .fill { height: 100%; width: 0; background: #3b82f6; transition: width .1s linear; }
  .job.finished .fill { background: #16a34a; }
  .job.cancelled .fill { background: #9ca3af; }
  .desc { grid-column: 2 / 5; font-size: .85rem; color: #556; margin-top: -.3rem; }
  #rtt { font-size: 2rem; font-variant-numeric: tabular-nums; }
  #spark { width: 100%; height: 48px; display: block; }
  .small { font-size: .85rem; color: #556; }
</style>
</head>
<body>
<h1>Heavy jobs on one loop, every other connection answered</h1>
<p class="lead">Each job processes its items on the server's event loop, a 1&nbsp;ms slice per iteration
(<code>loop.process</code>). Its progress arrives as server-sent events, at most one per loop iteration.
Meanwhile this page asks <code>/hello</code> four times a second over its own connection.</p>

<section>
  <label>Items per job <input id="items" type="number" value="{{items}}" min="1" max="100000000"></label>
  <label>Jobs <input id="count" type="number" value="2" min="1" max="4" style="width:4rem"></label>
  <button id="start">Start</button>
  <div id="jobs"></div>
</section>

<section>
  <div class="small"><code>GET /hello</code> round trip, now</div>
  <div id="rtt">–</div>
  <div class="small" id="rttstats">waiting for the first answer</div>
  <canvas id="spark" width="700" height="48"></canvas>
</section>

<script>
"use strict";
const jobsBox = document.getElementById("jobs");
const startButton = document.getElementById("start");
const running = new Map();   // id -> EventSource

function render(row, data, kind) {
  row.querySelector(".fill").style.width = (100 * data.fraction).toFixed(1) + "%";
  row.querySelector(".pct").textContent = Math.floor(100 * data.fraction) + "%";
  row.querySelector(".desc").textContent = data.description;
  if (kind !== "progress") {
    row.classList.add(kind);
    row.querySelector("button").disabled = true;
  }
}

function watch(id, items) {
  const row = document.createElement("div");
  row.className = "job";
  row.innerHTML = '<span>Job ' + id + '</span><div class="bar"><div class="fill"></div></div>' +
                  '<span class="pct">0%</span><button>Cancel</button>' +
                  '<div class="desc">starting ' + items.toLocaleString() + ' items</div>';
  row.querySelector("button").onclick = () => fetch("/jobs/" + id + "/cancel", { method: "POST" });
  jobsBox.prepend(row);
  const source = new EventSource("/jobs/" + id + "/events");
  running.set(id, source);
  for (const kind of ["progress", "finished", "cancelled"]) {
    source.addEventListener(kind, (event) => {
      render(row, JSON.parse(event.data), kind);
      if (kind !== "progress") { source.close(); running.delete(id); updateStart(); }
    });
  }
  source.onerror = () => { source.close(); running.delete(id); updateStart(); };
  updateStart();
}

function updateStart() { startButton.disabled = running.size >= 4; }

async function start(items, count) {
  for (let i = 0; i < count; i++) {
    const answer = await fetch("/jobs?items=" + items, { method: "POST" });
    if (!answer.ok) { alert(await answer.text()); return; }
    const job = await answer.json();
    watch(job.id, job.items);
  }
}

// The jobs run the count the field shows (the server wrote ?items= into it).
function itemsPerJob() { return Math.max(1, parseInt(document.getElementById("items").value, 10) || 1); }

startButton.onclick = () => start(itemsPerJob(),
  Math.min(4 - running.size, Math.max(1, parseInt(document.getElementById("count").value, 10) || 1)));

// /?start=N&items=M starts N jobs of the field's count at once (a link to share, and the headless check's way in).
const query = new URLSearchParams(location.search);
if (query.has("start")) {
  start(itemsPerJob(), Math.min(4, Math.max(1, parseInt(query.get("start"), 10) || 1)));
}

// The /hello probe: one request at a time, four a second; the last 40 round trips drawn.
const samples = [];
const rttBox = document.getElementById("rtt"), statsBox = document.getElementById("rttstats");
const canvas = document.getElementById("spark"), pen = canvas.getContext("2d");
async function probe() {
  const began = performance.now();
  try {
    await (await fetch("/hello", { cache: "no-store" })).text();
    const ms = performance.now() - began;
    samples.push(ms);
    if (samples.length > 40) samples.shift();
    rttBox.textContent = ms.toFixed(1) + " ms";
    const worst = Math.max(...samples), median = [...samples].sort((a, b) => a - b)[samples.length >> 1];
    statsBox.textContent = "median " + median.toFixed(1) + " ms, worst " + worst.toFixed(1) +
                           " ms over the last " + samples.length + " round trips; " + running.size + " job(s) running";
    pen.clearRect(0, 0, canvas.width, canvas.height);
    const top = Math.max(10, worst), step = canvas.width / 40;
    pen.fillStyle = "#3b82f6";
    samples.forEach((value, i) => {
      const h = Math.max(1, value / top * (canvas.height - 2));
      pen.fillRect(i * step + 1, canvas.height - h, step - 2, h);
    });
  } catch (error) {
    statsBox.textContent = "no answer: " + error;
  }
  setTimeout(probe, 250);
}
probe();
</script>
</body>
</html>
"""#
}
