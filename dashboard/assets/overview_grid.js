/* queuelens fleet overview grid (dash-ag-grid): one text-only cell renderer and one sort order.

   Queue names are label values read from Prometheus: hostile input. QueueLink puts the name
   into the page ONLY as a React text child (React escapes it: "<img src=x onerror=...>" stays
   those characters), never as HTML. The href is made by the server
   (dashboard.pages.overview.queue_href: "/queue/" + the percent-encoded name); anything else
   is shown as plain text without a link. */
(function () {
  "use strict";
  var components = (window.dashAgGridComponentFunctions =
    window.dashAgGridComponentFunctions || {});
  var functions = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

  components.QueueLink = function (props) {
    var text = props.value === null || props.value === undefined ? "" : String(props.value);
    var href = props.data ? props.data.queue_href : null;
    if (typeof href !== "string" || href.indexOf("/queue/") !== 0) {
      return text;
    }
    return React.createElement("a", {href: href}, text);
  };

  /* The verdict column sorts by severity (critical first), then by the verdict text. */
  functions.bySeverity = function (valueA, valueB, nodeA, nodeB) {
    var a = nodeA && nodeA.data ? nodeA.data.severity_rank : 0;
    var b = nodeB && nodeB.data ? nodeB.data.severity_rank : 0;
    if (a !== b) {
      return a - b;
    }
    return String(valueA).localeCompare(String(valueB));
  };

  /* The headroom column sorts by the ratio (row.headroom_ratio: 0 where the binding limit's
     ceiling is not measured, it binds), the queues nearest a limit first; a queue without a
     measured limit last in either direction's ascending order. */
  functions.byHeadroom = function (valueA, valueB, nodeA, nodeB) {
    var a = nodeA && nodeA.data ? nodeA.data.headroom_ratio : null;
    var b = nodeB && nodeB.data ? nodeB.data.headroom_ratio : null;
    var ka = typeof a === "number" ? a : Infinity;
    var kb = typeof b === "number" ? b : Infinity;
    if (ka !== kb) {
      return ka < kb ? -1 : 1;
    }
    return String(valueA).localeCompare(String(valueB));
  };
})();
