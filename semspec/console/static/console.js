// The console's live updates: one EventSource on /events; each message updates the board row
// of its task (or the monitor's signal table) in place. Text only: nothing from the server is
// ever parsed as HTML. Other pages listen to the "semspec:live" DOM event this dispatches.
(function () {
  "use strict";

  var COLUMNS = ["running", "escalated", "halted", "approved", "failed"];
  var FIELDS = ["plan_id", "phase", "iteration", "retries", "pressure", "cost", "signal"];

  function text(value) {
    return value === null || value === undefined ? "" : String(value);
  }

  function shown(name, fields) {
    if (name === "cost") {
      return fields.cost ? "$" + Number(fields.cost).toFixed(4) : null;
    }
    if (name === "pressure" && fields.pressure !== undefined) {
      var share = fields.utilization;
      return fields.pressure + (share === undefined ? "" : " (" + Math.round(share * 100) + "%)");
    }
    return fields[name] === undefined ? null : text(fields[name]);
  }

  function table(column) {
    return document.querySelector('table.board[data-column="' + column + '"] tbody');
  }

  function recount() {
    COLUMNS.forEach(function (column) {
      var body = table(column);
      var badge = document.querySelector('[data-count="' + column + '"]');
      if (body && badge) {
        badge.textContent = String(body.rows.length);
      }
    });
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
    FIELDS.forEach(function (name) {
      var value = shown(name, fields);
      var cell = row.querySelector('[data-field="' + name + '"]');
      if (value !== null && cell) {
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
    [data.at, data.level, data.task_id, data.reason, data.message].forEach(function (value) {
      var cell = document.createElement("td");
      cell.textContent = text(value);
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
      updateRow(data);
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

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", connect);
  } else {
    connect();
  }
})();
