/// The console's script (served by ``ConsoleAssets`` at `/console/console.js`): log-in, pages and
/// the SVG charts, with no library and no request to anyone but this server.
enum ConsoleScript {
    static let js = #"""
        "use strict";
        (function () {
          const KEY = "entitled.console.key";
          const $ = (id) => document.getElementById(id);
          const colors = ["#2563eb", "#16a34a", "#dc2626", "#d97706", "#7c3aed", "#0891b2"];
          const state = { range: 30, interval: "day", environment: "Production" };

          function el(tag, attrs, ...children) {
            const svg = ["svg", "path", "line", "text", "rect", "circle", "g", "polyline"].includes(tag);
            const node = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
            for (const [k, v] of Object.entries(attrs || {})) {
              if (v === null || v === undefined || v === false) continue;
              if (k === "text") node.textContent = v;
              else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
              else node.setAttribute(k, v === true ? "" : String(v));
            }
            for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
            return node;
          }

          async function api(path, method, json) {
            const key = sessionStorage.getItem(KEY);
            const headers = { Authorization: "Bearer " + key };
            if (json !== undefined) headers["Content-Type"] = "application/json";
            const response = await fetch(path, { method: method || "GET", headers, cache: "no-store",
                                                 body: json === undefined ? undefined : JSON.stringify(json) });
            if (response.status === 401) { sessionStorage.removeItem(KEY); show(); throw new Error("unauthorized"); }
            const body = await response.json();
            if (!response.ok) { const e = new Error((body.code || response.status) + ": " + (body.detail || "")); e.code = body.code; throw e; }
            return body;
          }

          // What this key may do here (`/v1/console/session`), asked once per log-in.
          async function session() {
            if (!state.session) state.session = await api("/v1/console/session");
            return state.session;
          }

          // Dates: the API's days are UTC; instants are shown in the viewer's time zone.
          const dayFormat = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" });
          const longDay = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", timeZone: "UTC" });
          const instant = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
          const utcDay = (date) => new Date(date + "T00:00:00Z");
          const isoDay = (d) => d.toISOString().slice(0, 10);
          const when = (iso) => iso ? instant.format(new Date(iso)) : "—";
          const money = (v, c) => { try { return new Intl.NumberFormat(undefined, { style: "currency", currency: c }).format(v); }
                                    catch (e) { return v.toFixed(2) + " " + c; } };
          const fmt = (v) => Number.isInteger(v) ? String(v) : v.toFixed(2);

          // ---- charts ----
          function chart(title, how, points, series) {
            const W = 360, H = 180, L = 40, R = 8, T = 8, B = 24;
            const n = points.length;
            let max = 0;
            for (const s of series) for (const p of points) max = Math.max(max, s.value(p) || 0);
            if (max === 0) max = 1;
            const nice = Math.pow(10, Math.floor(Math.log10(max)));
            const top = Math.ceil(max / nice) * nice;
            const x = (i) => L + (n <= 1 ? (W - L - R) / 2 : i * (W - L - R) / (n - 1));
            const y = (v) => T + (H - T - B) * (1 - v / top);
            const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
            for (let k = 0; k <= 4; k++) {
              const v = top * k / 4;
              svg.append(el("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
              svg.append(el("text", { x: L - 4, y: y(v) + 3, "text-anchor": "end", class: "axis", text: fmt(v) }));
            }
            const ticks = Math.min(n, 6);
            for (let k = 0; k < ticks; k++) {
              const i = ticks === 1 ? 0 : Math.round(k * (n - 1) / (ticks - 1));
              svg.append(el("text", { x: x(i), y: H - 6, "text-anchor": "middle", class: "axis", text: dayFormat.format(utcDay(points[i].date)) }));
            }
            series.forEach((s, si) => {
              const d = points.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(s.value(p) || 0).toFixed(1)}`).join(" ");
              svg.append(el("path", { d, fill: "none", stroke: colors[si % colors.length], "stroke-width": 2 }));
            });
            const cursor = el("line", { y1: T, y2: H - B, stroke: "#98a2b3", "stroke-dasharray": "3 3", visibility: "hidden" });
            svg.append(cursor);
            const hit = el("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "transparent" });
            svg.append(hit);
            const tip = $("tip");
            hit.addEventListener("mousemove", (event) => {
              const box = svg.getBoundingClientRect();
              const px = (event.clientX - box.left) * W / box.width;
              const i = Math.max(0, Math.min(n - 1, Math.round(n <= 1 ? 0 : (px - L) / ((W - L - R) / (n - 1)))));
              cursor.setAttribute("x1", x(i)); cursor.setAttribute("x2", x(i)); cursor.setAttribute("visibility", "visible");
              const p = points[i];
              tip.textContent = longDay.format(utcDay(p.date)) + " (UTC)\n" + series.map((s) => s.name + ": " + fmt(s.value(p) || 0)).join("\n");
              tip.hidden = false;
              tip.style.left = (event.clientX + 12) + "px"; tip.style.top = (event.clientY + 12) + "px";
            });
            hit.addEventListener("mouseleave", () => { tip.hidden = true; cursor.setAttribute("visibility", "hidden"); });
            const legend = el("div", { class: "legend" }, series.map((s, si) => {
              const swatch = el("i"); swatch.style.background = colors[si % colors.length];
              return el("span", {}, swatch, s.name);
            }));
            return el("div", { class: "chart" }, el("h2", { text: title }), legend, svg, el("p", { class: "how", text: how }));
          }

          function card(id, label, value, title) {
            return el("div", { class: "card", title }, el("div", { class: "v", id, "data-value": value, text: value }), el("div", { class: "l", text: label }));
          }

          // ---- pages ----
          async function overview(page) {
            // "Today" is the server's (a dev server's clock is virtual), as a UTC day.
            if (!state.serverTime) {
              const health = await api("/v1/console/health");
              state.serverTime = health.serverTime;
              // Production unless the server hears only from other environments (a dev server: Sandbox).
              const heard = health.lastNotifications.map((r) => r.environment);
              if (!state.environmentChosen && heard.length && !heard.includes("Production")) state.environment = heard[0];
            }
            const to = new Date(state.serverTime); const from = new Date(to.getTime() - (state.range - 1) * 86400000);
            const controls = el("div", { class: "controls" },
              select([7, 30, 90, 365].map((d) => [d, d + " days"]), state.range, (v) => { state.range = Number(v); route(); }),
              select([["day", "by day"], ["week", "by week"], ["month", "by month"]], state.interval, (v) => { state.interval = v; route(); }),
              select([["Production", "Production"], ["Sandbox", "Sandbox"], ["Xcode", "Xcode"], ["LocalTesting", "LocalTesting"]],
                     state.environment, (v) => { state.environment = v; state.environmentChosen = true; route(); }));
            page.append(el("h1", { text: "Overview" }), controls);
            const q = `from=${isoDay(from)}&to=${isoDay(to)}&interval=${state.interval}&environment=${state.environment}`;
            const body = await api("/v1/metrics/overview?" + q);
            const pts = body.series;
            const last = pts[pts.length - 1] || {};
            const sum = (k) => pts.reduce((a, p) => a + (p[k] || 0), 0);
            const currencies = [...new Set(pts.flatMap((p) => Object.keys(p.mrr).concat(Object.keys(p.revenue))))].sort();
            // MRR in console.reportingCurrency, when the server has one configured.
            const reported = last.mrrReported;
            const startActive = (pts[0] || {}).activeSubscriptions || 0;
            const churnRate = sum("churned") / Math.max(1, startActive + sum("newSubscriptions"));
            const paidTx = sum("newSubscriptions") + sum("renewals");
            const troubled = sum("recoveries") + (last.inGracePeriod || 0) + (last.inBillingRetry || 0);
            page.append(el("div", { class: "cards" },
              card("card-active", "Active subscriptions", last.activeSubscriptions || 0, "Paid access at the end of the last day (UTC)"),
              card("card-trials", "Active trials", last.activeTrials || 0, "Free trials granting access at the end of the last day"),
              card("card-mrr", "MRR", currencies.map((c) => money(last.mrr[c] || 0, c)).join(" · ") || "0", "Monthly price of the paid active subscriptions"),
              ...(reported ? [card("card-mrr-reported", "MRR in " + reported.currency, money(reported.amount, reported.currency),
                   "Every currency's MRR converted at console.rates and summed" +
                   (reported.unconverted.length ? "; not converted (no rate): " + reported.unconverted.join(", ") : ""))] : []),
              card("card-new", "New subscriptions", sum("newSubscriptions"), "Subscriptions bought for the first time in the range (trials included)"),
              card("card-renewals", "Renewals", sum("renewals"), "Renewal transactions in the range"),
              card("card-churn", "Churn rate", (churnRate * 100).toFixed(1) + "%", "Churned ÷ (active at the start + new) over the range"),
              card("card-refunds", "Refunds", sum("refunds") + " (" + (100 * sum("refunds") / Math.max(1, paidTx)).toFixed(1) + "%)",
                   "Refunded transactions, and as a share of new subscriptions and renewals"),
              card("card-retry", "Grace / billing retry", (last.inGracePeriod || 0) + " / " + (last.inBillingRetry || 0), "At the end of the last day"),
              card("card-recovery", "Recovery rate", (100 * sum("recoveries") / Math.max(1, troubled)).toFixed(1) + "%",
                   "Recovered ÷ (recovered + still in grace or billing retry)"),
              card("card-conversions", "Trial → paid", sum("conversions"), "Free trials that became paid in the range")));
            const per = state.interval === "day" ? "day" : state.interval;
            page.append(el("div", { class: "charts" },
              chart("Active subscriptions and trials", `Level at the end of each ${per} (UTC), from the customers' answers then.`, pts,
                    [{ name: "Subscriptions", value: (p) => p.activeSubscriptions }, { name: "Trials", value: (p) => p.activeTrials }]),
              chart("MRR", "Each paid active subscription's price per month (yearly ÷ 12, weekly × 52/12), per currency, at the end of each " + per + ".", pts,
                    currencies.map((c) => ({ name: c, value: (p) => p.mrr[c] || 0 })).concat(reported
                      ? [{ name: "All in " + reported.currency, value: (p) => (p.mrrReported || {}).amount || 0 }] : [])),
              chart("New, renewals, churned", `Counted per ${per}: first purchases (trials included), renewal transactions by purchase date, subscriptions that stopped granting access.`, pts,
                    [{ name: "New", value: (p) => p.newSubscriptions }, { name: "Renewals", value: (p) => p.renewals }, { name: "Churned", value: (p) => p.churned }]),
              chart("Grace period and billing retry", `Subscriptions in each state at the end of each ${per}.`, pts,
                    [{ name: "Grace period", value: (p) => p.inGracePeriod }, { name: "Billing retry", value: (p) => p.inBillingRetry }]),
              chart("Refunds", `Refunded transactions per ${per}, by Apple's revocation date.`, pts, [{ name: "Refunds", value: (p) => p.refunds }]),
              chart("Trial conversions and recoveries", `Per ${per}: trials that became paid; subscriptions back to active from grace or retry.`, pts,
                    [{ name: "Conversions", value: (p) => p.conversions }, { name: "Recoveries", value: (p) => p.recoveries }]),
              chart("Revenue", `Prices of paid subscription transactions per ${per}, by purchase date, per currency (before Apple's commission).`, pts,
                    currencies.map((c) => ({ name: c, value: (p) => p.revenue[c] || 0 })))));
          }

          function select(options, value, change) {
            const s = el("select", { onchange: (e) => change(e.target.value) },
              options.map(([v, label]) => el("option", { value: v, selected: String(v) === String(value), text: label })));
            return s;
          }

"""# + ConsoleCustomerScript.js + #"""
          async function health(page) {
            const body = await api("/v1/console/health");
            page.append(el("h1", { text: "Health" }), el("p", { class: "muted", text: "Last " + body.windowHours + " hours, server time " + when(body.serverTime) }));
            const pts = body.hours.map((h) => ({ date: h.hour.slice(0, 10), hour: h.hour, accepted: h.accepted, rejected: h.rejected }));
            const total = body.hours.reduce((a, h) => a + h.accepted + h.rejected, 0);
            page.append(el("div", { class: "cards" }, card("health-ingested", "Messages (24 h)", total, "Accepted and rejected messages"),
              card("health-rate", "Per hour", (total / Math.max(1, body.windowHours)).toFixed(1), "Average over the window")));
            if (pts.length) page.append(el("div", { class: "charts" }, chart("Ingest per hour", "Messages received per hour, accepted and rejected.", pts,
              [{ name: "Accepted", value: (p) => p.accepted }, { name: "Rejected", value: (p) => p.rejected }])));
            const table = (id, heads, rows) => el("table", { id }, el("tr", {}, heads.map((h) => el("th", { text: h }))), rows);
            page.append(el("div", { class: "panel" }, el("h2", { text: "Rejections by code" }),
              table("rejections", ["Code", "Count"], body.rejections.map((r) => el("tr", {}, el("td", { text: r.code }), el("td", { text: r.count }))))));
            page.append(el("div", { class: "panel" }, el("h2", { text: "Last notification per app and environment" }),
              table("last-notifications", ["App", "Environment", "Received"], body.lastNotifications.map((r) =>
                el("tr", {}, el("td", { text: r.bundleId }), el("td", { text: r.environment }), el("td", { text: when(r.receivedAt) }))))));
            page.append(el("div", { class: "panel" }, el("h2", { text: "Reconciliation with Apple" }),
              body.reconciledApps.length ? null : el("p", { class: "muted", text: "No app has serverAPI configured: nothing is reconciled." }),
              table("reconciliation", ["App", "Environment", "Ingested up to", "Running now"], body.reconciliation.map((r) =>
                el("tr", {}, el("td", { text: r.bundleId }), el("td", { text: r.environment }), el("td", { text: when(r.watermark) }), el("td", { text: r.leased ? "yes" : "no" }))))));
            page.append(el("div", { class: "panel", id: "webhooks" }, el("h2", { text: "Webhooks" }),
              body.webhooks.length ? null : el("p", { class: "muted", text: "No webhook endpoint is configured." }),
              table("webhook-status", ["Endpoint", "Pending", "Failed", "Last delivered"], body.webhooks.map((w) =>
                el("tr", {}, el("td", { text: w.endpoint }), el("td", { text: w.pending }), el("td", { text: w.failed }), el("td", { text: when(w.lastDeliveredAt) }))))));
          }

          async function route() {
            const page = $("page");
            page.replaceChildren();
            delete document.body.dataset.ready;
            const [name, ...rest] = (location.hash.slice(1) || "overview").split("/");
            for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", a.getAttribute("href") === "#" + name || ((name === "customer" || name === "orders") && a.getAttribute("href") === "#customers"));
            try {
              if (name === "customers") await customers(page, decodeURIComponent(rest[0] || ""), rest[1] ? decodeURIComponent(rest[1]) : null);
              else if (name === "orders") await orders(page, decodeURIComponent(rest[0] || ""));
              else if (name === "customer") await customer(page, decodeURIComponent(rest.join("/")));
              else if (name === "health") await health(page);
              else await overview(page);
              document.body.dataset.ready = name;
            } catch (error) {
              if (String(error.message) !== "unauthorized") page.append(el("p", { class: "error", id: "page-error", text: String(error.message) }));
            }
          }

          function show() {
            const key = sessionStorage.getItem(KEY);
            $("login").hidden = !!key;
            $("nav").hidden = !key;
            if (key) route(); else $("page").replaceChildren();
          }

          document.addEventListener("DOMContentLoaded", () => {
            $("login-form").addEventListener("submit", async (event) => {
              event.preventDefault();
              const key = $("login-key").value.trim();
              const probe = await fetch("/v1/console/health", { headers: { Authorization: "Bearer " + key } });
              if (!probe.ok) { $("login-error").textContent = probe.status === 403 ? "This key lacks the console or admin scope." : "This key is not valid."; return; }
              sessionStorage.setItem(KEY, key);
              delete state.session;
              $("login-key").value = "";
              $("login-error").textContent = "";
              show();
            });
            $("logout").addEventListener("click", () => { sessionStorage.removeItem(KEY); delete state.session; show(); });
            window.addEventListener("hashchange", () => { if (sessionStorage.getItem(KEY)) route(); });
            show();
          });
        })();
        """#
}
