// The console's live updates: one EventSource on /events; each message updates the board row
// of its task (or the monitor's signal table) in place. Text only: nothing from the server is
// ever parsed as HTML. Other pages listen to the "semspec:live" DOM event this dispatches.
(function () {
  "use strict";

  var COLUMNS = ["running", "escalated", "halted", "approved", "failed"];
  // "land" is filled when the page loads (a land is no loop event): a row the feed makes keeps
  // its cell, empty, in its column.
  var FIELDS = ["plan_id", "phase", "iteration", "retries", "pressure", "cost", "signal", "started", "updated", "land"];
  var TIMES = ["started", "updated"];
  var MINUTE = 60, HOUR = 3600, DAY = 86400;

  // The wording of semspec/console/human_time.py's ``ago``: keep the two the same.
  function agoText(iso) {
    var seconds = Math.floor((Date.now() - Date.parse(iso)) / 1000);
    if (isNaN(seconds)) {
      return null;
    }
    if (seconds < 10) {
      return "just now";
    }
    if (seconds < MINUTE) {
      return seconds + " s ago";
    }
    if (seconds < HOUR) {
      return Math.floor(seconds / MINUTE) + " min ago";
    }
    if (seconds < DAY) {
      return Math.floor(seconds / HOUR) + " h ago";
    }
    return Math.floor(seconds / DAY) + " d ago";
  }

  function exactText(iso) {
    var at = new Date(Date.parse(iso));
    return at.toISOString().slice(0, 19).replace("T", " ") + " UTC";
  }

  // A <time> as human_time.time_tag makes it; plain text when ``iso`` is not a time.
  function timeElement(iso) {
    var said = agoText(iso);
    if (said === null) {
      return document.createTextNode(text(iso));
    }
    var node = document.createElement("time");
    node.dateTime = iso;
    node.title = exactText(iso);
    node.dataset.ago = "";
    node.textContent = said;
    return node;
  }

  function refreshTimes() {
    document.querySelectorAll("time[data-ago]").forEach(function (node) {
      var said = agoText(node.getAttribute("datetime"));
      if (said !== null) {
        node.textContent = said;
      }
    });
  }

  function text(value) {
    return value === null || value === undefined ? "" : String(value);
  }

  function shown(name, fields) {
    if (name === "pressure" && fields.pressure !== undefined) {
      var share = fields.utilization;
      return fields.pressure + (share === undefined ? "" : " (" + Math.round(share * 100) + "%)");
    }
    return fields[name] === undefined ? null : text(fields[name]);
  }

  function table(column) {
    return document.querySelector('table.board[data-column="' + column + '"] tbody');
  }

  // The board's filter (board_filter.py holds the same rules for the page as served).
  function currentFilter() {
    var form = document.getElementById("board-filter");
    if (!form) {
      return null;
    }
    return {
      text: form.elements.q.value.trim().toLowerCase(),
      state: form.elements.state.value,
      plan: form.elements.plan.value,
    };
  }

  function rowMatches(row, filter) {
    if (!filter) {
      return true;
    }
    if (filter.state && row.dataset.state !== filter.state) {
      return false;
    }
    var plan = row.querySelector('[data-field="plan_id"]');
    if (filter.plan && (!plan || plan.textContent !== filter.plan)) {
      return false;
    }
    if (!filter.text) {
      return true;
    }
    var phase = row.querySelector('[data-field="phase"]');
    var seen = [row.querySelector("th").textContent, plan ? plan.textContent : "", phase ? phase.textContent : ""];
    return seen.join(" ").toLowerCase().indexOf(filter.text) >= 0;
  }

  function recount() {
    var filter = currentFilter();
    var hidden = 0;
    COLUMNS.forEach(function (column) {
      var body = table(column);
      if (!body) {
        return;
      }
      var shown = 0;
      Array.prototype.forEach.call(body.rows, function (row) {
        var keep = rowMatches(row, filter);
        row.hidden = !keep;
        if (keep) {
          shown += 1;
        } else {
          hidden += 1;
        }
      });
      var badge = document.querySelector('[data-count="' + column + '"]');
      if (badge) {
        badge.textContent = String(shown);
      }
      // An empty section keeps its heading only (console.css folds it).
      var section = body.closest("section");
      if (section) {
        if (shown) {
          delete section.dataset.empty;
        } else {
          section.dataset.empty = "true";
        }
      }
      body.closest("table").hidden = shown === 0;
    });
    var note = document.getElementById("filter-note");
    if (note) {
      note.textContent = hidden ? hidden + (hidden === 1 ? " task" : " tasks") + " not shown" : "";
    }
  }

  // The nav's count of open escalations, kept from the tasks it names.
  function noteEscalation(data) {
    var badge = document.getElementById("escalation-count");
    var fields = data.fields || {};
    if (!badge || (data.kind !== "escalation" && data.kind !== "finished")) {
      return;
    }
    var tasks = badge.dataset.tasks ? badge.dataset.tasks.split(" ") : [];
    var at = tasks.indexOf(data.task_id);
    var waiting = data.kind === "escalation" && (fields.state === "escalated" || fields.state === "halted");
    if (waiting && at < 0) {
      tasks.push(data.task_id);
    } else if (!waiting && at >= 0) {
      tasks.splice(at, 1);
    }
    badge.dataset.tasks = tasks.join(" ");
    badge.dataset.count = String(tasks.length);
    badge.textContent = String(tasks.length);
  }

  function newRow(taskId) {
    var row = document.createElement("tr");
    row.id = "task-" + taskId;
    row.dataset.taskId = taskId;
    var head = document.createElement("th");
    head.scope = "row";
    var link = document.createElement("a");
    link.href = "/tasks/" + encodeURIComponent(taskId);
    link.textContent = taskId;
    head.appendChild(link);
    var reason = document.createElement("span");
    reason.className = "reason";
    reason.dataset.field = "reason";
    head.appendChild(reason);
    row.appendChild(head);
    FIELDS.forEach(function (name) {
      var cell = document.createElement("td");
      cell.dataset.field = name;
      row.appendChild(cell);
    });
    return row;
  }

  function updateRow(data) {
    var fields = data.fields || {};
    if (data.plan_id) {
      fields.plan_id = data.plan_id;
    }
    var row = document.getElementById("task-" + data.task_id);
    var column = fields.state && COLUMNS.indexOf(fields.state) >= 0 ? fields.state : null;
    if (!row) {
      var target = table(column || "running");
      if (!target) {
        return;
      }
      row = newRow(data.task_id);
      row.dataset.state = column || "running";
      target.insertBefore(row, target.firstChild);
    } else if (column && row.dataset.state !== column && table(column)) {
      row.dataset.state = column;
      var into = table(column);
      into.insertBefore(row, into.firstChild);
    }
    if (!row.querySelector('[data-field="started"] time') && fields.updated) {
      fields.started = fields.updated; // a row the feed made: its first event is its start
    }
    FIELDS.concat(["reason"]).forEach(function (name) {
      var value = shown(name, fields);
      var cell = row.querySelector('[data-field="' + name + '"]');
      if (value === null || !cell) {
        return;
      }
      if (TIMES.indexOf(name) >= 0) {
        cell.replaceChildren(timeElement(value));
      } else {
        cell.textContent = value;
      }
    });
    if (data.signal_id) {
      row.dataset.lastSignal = data.signal_id;
    }
    recount();
  }

  function addSignal(data) {
    var stream = document.querySelector("#signal-stream tbody");
    if (!stream) {
      return;
    }
    var row = document.createElement("tr");
    row.dataset.signalId = data.signal_id;
    row.dataset.level = data.level;
    [data.at, data.level, data.task_id, data.reason, data.message].forEach(function (value, i) {
      var cell = document.createElement("td");
      if (i === 0) {
        cell.appendChild(timeElement(text(value)));
      } else {
        cell.textContent = text(value);
      }
      row.appendChild(cell);
    });
    stream.insertBefore(row, stream.firstChild);
    var count = document.querySelector('[data-level-count="' + data.level + '"]');
    if (count) {
      count.textContent = String(Number(count.textContent || "0") + 1);
    }
  }

  function handle(kind, raw) {
    var data;
    try {
      data = JSON.parse(raw);
    } catch (err) {
      return;
    }
    if (data.task_id) {
      if (kind === "task" && data.at) {
        // The loop event's own time: the row's Updated column.
        data.fields = data.fields || {};
        data.fields.updated = data.at;
      }
      updateRow(data);
      noteEscalation(data);
    }
    if (kind === "signal") {
      addSignal(data);
    }
    document.dispatchEvent(new CustomEvent("semspec:live", { detail: { kind: kind, data: data } }));
  }

  function connect() {
    var status = document.getElementById("live-status");
    var source = new EventSource("/events");
    source.onopen = function () {
      if (status) {
        status.textContent = "live";
      }
      document.body.dataset.live = "open";
    };
    source.onerror = function () {
      if (status) {
        status.textContent = "reconnecting";
      }
      document.body.dataset.live = "closed";
    };
    source.addEventListener("task", function (ev) {
      handle("task", ev.data);
    });
    source.addEventListener("signal", function (ev) {
      handle("signal", ev.data);
    });
    // The console dropped this page's queue (it fell behind) or is stopping: load afresh.
    source.addEventListener("reload", function () {
      source.close();
      window.setTimeout(function () {
        window.location.reload();
      }, 500);
    });
  }

  function start() {
    var form = document.getElementById("board-filter");
    if (form) {
      // Filtered as one types; the address keeps the filter for a reload or a bookmark.
      form.addEventListener("input", function () {
        recount();
        var params = new URLSearchParams(new FormData(form));
        ["q", "state", "plan"].forEach(function (name) {
          if (!params.get(name)) {
            params.delete(name);
          }
        });
        var query = params.toString();
        window.history.replaceState(null, "", query ? "/?" + query : "/");
      });
    }
    window.setInterval(refreshTimes, 30000);
    connect();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
