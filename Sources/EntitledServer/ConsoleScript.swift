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
          // Gridlines at 1, 2 or 5 × 10^k, about four of them; counts (`whole`) only at whole numbers.
          function scale(max, whole) {
            const m = max > 0 ? max : 1, raw = m / 4, p = Math.pow(10, Math.floor(Math.log10(raw)));
            let step = [1, 2, 5, 10].map((x) => x * p).find((x) => x >= raw);
            if (whole) step = Math.max(1, Math.round(step));
            return { step, top: step * Math.ceil(m / step) };
          }

          // A chart of `series` over `points`: lines for levels and amounts, grouped bars for counts
          // (`options.bars`, whole-number ticks). `options.label(p)` and `options.tip(p)` name a
          // point on the axis and in the tooltip (default: its UTC day), `options.ticks` how many
          // labels the axis has at most (default 6).
          function chart(title, how, points, series, options) {
            const o = options || {};
            const W = 360, H = 180, L = 40, R = 8, T = 8, B = 24;
            const n = points.length;
            const label = o.label || ((p) => dayFormat.format(utcDay(p.date)));
            const tipTitle = o.tip || ((p) => longDay.format(utcDay(p.date)) + " (UTC)");
            const color = (s, si) => s.color || colors[si % colors.length];
            let max = 0;
            for (const s of series) for (const p of points) max = Math.max(max, s.value(p) || 0);
            const { step, top } = scale(max, o.bars || o.whole);
            const slot = (W - L - R) / Math.max(1, o.bars ? n : n - 1);
            const x = (i) => o.bars ? L + slot * (i + 0.5) : L + (n <= 1 ? (W - L - R) / 2 : i * slot);
            const y = (v) => T + (H - T - B) * (1 - v / top);
            const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
            for (let v = 0; v <= top + step / 2; v += step) {
              svg.append(el("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
              svg.append(el("text", { x: L - 4, y: y(v) + 3, "text-anchor": "end", class: "axis", text: fmt(Math.round(v * 100) / 100) }));
            }
            // The first label starts at its point's left edge and the last ends at its right edge, so
            // neither is cut off by the chart's border.
            const ticks = Math.min(n, o.ticks || 6);
            for (let k = 0; k < ticks; k++) {
              const i = ticks === 1 ? 0 : Math.round(k * (n - 1) / (ticks - 1));
              const half = o.bars ? slot / 2 : 0;
              const [at, anchor] = ticks === 1 ? [x(i), "middle"] : k === 0 ? [x(i) - half, "start"] : k === ticks - 1 ? [x(i) + half, "end"] : [x(i), "middle"];
              svg.append(el("text", { x: at, y: H - 6, "text-anchor": anchor, class: "axis", text: label(points[i]) }));
            }
            series.forEach((s, si) => {
              if (o.bars) {
                const w = Math.max(1, slot * 0.8 / series.length);
                points.forEach((p, i) => {
                  const v = s.value(p) || 0;
                  if (v > 0) svg.append(el("rect", { x: (x(i) - slot * 0.4 + si * w).toFixed(1), y: y(v).toFixed(1), width: w.toFixed(1),
                                                     height: (y(0) - y(v)).toFixed(1), fill: color(s, si), class: "bar" }));
                });
                return;
              }
              const d = points.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(s.value(p) || 0).toFixed(1)}`).join(" ");
              svg.append(el("path", { d, fill: "none", stroke: color(s, si), "stroke-width": 2 }));
              // A single point is a dot: a path of one point draws nothing.
              if (n === 1) svg.append(el("circle", { cx: x(0), cy: y(s.value(points[0]) || 0), r: 3, fill: color(s, si) }));
            });
            const cursor = el("line", { y1: T, y2: H - B, stroke: "#98a2b3", "stroke-dasharray": "3 3", visibility: "hidden" });
            svg.append(cursor);
            const hit = el("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "transparent" });
            svg.append(hit);
            const tip = $("tip");
            hit.addEventListener("mousemove", (event) => {
              const box = svg.getBoundingClientRect();
              const px = (event.clientX - box.left) * W / box.width;
              const at = o.bars ? Math.floor((px - L) / slot) : Math.round(n <= 1 ? 0 : (px - L) / slot);
              const i = Math.max(0, Math.min(n - 1, at));
              cursor.setAttribute("x1", x(i)); cursor.setAttribute("x2", x(i)); cursor.setAttribute("visibility", "visible");
              const p = points[i];
              tip.textContent = tipTitle(p) + "\n" + series.map((s) => s.name + ": " + fmt(s.value(p) || 0)).join("\n");
              tip.hidden = false;
              tip.style.left = (event.clientX + 12) + "px"; tip.style.top = (event.clientY + 12) + "px";
            });
            hit.addEventListener("mouseleave", () => { tip.hidden = true; cursor.setAttribute("visibility", "hidden"); });
            const legend = el("div", { class: "legend" }, series.map((s, si) => {
              const swatch = el("i"); swatch.style.background = color(s, si);
              return el("span", {}, swatch, s.name);
            }));
            return el("div", { class: "chart", "data-kind": o.bars ? "bars" : "lines" }, el("h2", { text: title }), legend, svg, el("p", { class: "how", text: how }));
          }

          // A number and what it counts over which window (`window`, shown under the label).
          // With `chart` (a chart family), the card links to that chart page.
          function card(id, label, value, window, title, chart) {
            return el("div", { class: "card", title }, el("div", { class: "v", id, "data-value": value, text: value }),
              el("div", { class: "l", text: label }), el("div", { class: "w", text: window }),
              chart ? el("a", { class: "more", href: "#charts/" + chart, text: "Chart →" }) : null);
          }

          // What to do when there is nothing to show yet: where Apple's notifications go.
          function notificationsURL() { return location.origin + "/v1/apple/notifications"; }
          function nothingYet(id, text) { return el("p", { class: "muted empty", id, text }); }

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
            // The window each card covers: the range's days, or the end of its last day.
            const range = `${dayFormat.format(utcDay(isoDay(from)))} – ${dayFormat.format(utcDay(isoDay(to)))} (${state.range} days, UTC)`;
            const atEnd = "at the end of " + dayFormat.format(utcDay(isoDay(to))) + " (UTC)";
            const revenue = currencies.map((c) => [c, pts.reduce((a, p) => a + (p.revenue[c] || 0), 0)]).filter(([, v]) => v > 0);
            page.append(el("div", { class: "cards" },
              card("card-active", "Active paid subscriptions", last.activeSubscriptions || 0, atEnd, "Subscriptions granting paid access", "subscribers"),
              ...(body.unlinkedActiveSubscriptions ? [card("card-unlinked", "Of them unlinked (no customer yet)", body.unlinkedActiveSubscriptions, "now, whatever the range",
                   "Bought without an appAccountToken and not yet claimed by a customer; counted in the figures. Search one by its originalTransactionId.")] : []),
              card("card-trials", "Active free trials", last.activeTrials || 0, atEnd, "Free trials granting access", "conversion"),
              card("card-mrr", "MRR (monthly recurring revenue)", currencies.map((c) => money(last.mrr[c] || 0, c)).join(" · ") || "0", atEnd,
                   "Monthly price of the paid active subscriptions, per currency", "revenue"),
              ...(reported ? [card("card-mrr-reported", "MRR in " + reported.currency, money(reported.amount, reported.currency), atEnd,
                   "Every currency's MRR converted at console.rates and summed" +
                   (reported.unconverted.length ? "; not converted (no rate): " + reported.unconverted.join(", ") : ""))] : []),
              card("card-revenue", "Revenue (before Apple's commission)", revenue.map(([c, v]) => money(v, c)).join(" · ") || "0", range,
                   "Prices of the paid subscription transactions purchased in the range, per currency", "revenue"),
              card("card-new", "New subscriptions (trials included)", sum("newSubscriptions"), range, "Subscriptions bought for the first time", "subscribers"),
              card("card-renewals", "Renewals", sum("renewals"), range, "Renewal transactions, by purchase date"),
              card("card-churn", "Churn rate", (churnRate * 100).toFixed(1) + "%", range, "Churned ÷ (active at the start + new)", "subscribers"),
              card("card-refunds", "Refunds (share of paid transactions)", sum("refunds") + " (" + (100 * sum("refunds") / Math.max(1, paidTx)).toFixed(1) + "%)", range,
                   "Refunded transactions, and as a share of new subscriptions and renewals", "cohorts"),
              card("card-retry", "In grace period / billing retry", (last.inGracePeriod || 0) + " / " + (last.inBillingRetry || 0), atEnd,
                   "Subscriptions whose renewal payment failed"),
              card("card-recovery", "Recovery rate", (100 * sum("recoveries") / Math.max(1, troubled)).toFixed(1) + "%", range,
                   "Recovered ÷ (recovered + still in grace or billing retry)"),
              card("card-conversions", "Trials converted to paid", sum("conversions"), range, "Free trials that became paid", "conversion")));
            if (!pts.some((p) => p.activeSubscriptions || p.activeTrials || p.newSubscriptions || p.churned || p.refunds)) {
              page.append(nothingYet("overview-empty", `No subscription in ${state.environment} in this range yet. Purchases arrive as Apple's ` +
                `notifications (point App Store Connect's App Store Server Notifications URL at ${notificationsURL()}) and as ` +
                "transactions your app posts (EntitledKit); try another environment or a longer range above."));
            }
            const per = state.interval === "day" ? "day" : state.interval;
            const bars = { bars: true };
            page.append(el("div", { class: "charts" },
              chart("Active subscriptions and trials", `Level at the end of each ${per} (UTC), from the customers' answers then.`, pts,
                    [{ name: "Subscriptions", value: (p) => p.activeSubscriptions }, { name: "Trials", value: (p) => p.activeTrials }], { whole: true }),
              chart("MRR", "Each paid active subscription's price per month (yearly ÷ 12, weekly × 52/12), per currency, at the end of each " + per + ".", pts,
                    currencies.map((c) => ({ name: c, value: (p) => p.mrr[c] || 0 })).concat(reported
                      ? [{ name: "All in " + reported.currency, value: (p) => (p.mrrReported || {}).amount || 0 }] : [])),
              chart("New, renewals, churned", `Counted per ${per}: first purchases (trials included), renewal transactions by purchase date, subscriptions that stopped granting access.`, pts,
                    [{ name: "New", value: (p) => p.newSubscriptions }, { name: "Renewals", value: (p) => p.renewals },
                     { name: "Churned", value: (p) => p.churned, color: colors[2] }], bars),
              chart("Grace period and billing retry", `Subscriptions in each state at the end of each ${per}.`, pts,
                    [{ name: "Grace period", value: (p) => p.inGracePeriod, color: colors[3] }, { name: "Billing retry", value: (p) => p.inBillingRetry, color: colors[2] }], { whole: true }),
              chart("Refunds", `Refunded transactions per ${per}, by Apple's revocation date.`, pts, [{ name: "Refunds", value: (p) => p.refunds, color: colors[2] }], bars),
              chart("Trial conversions and recoveries", `Per ${per}: trials that became paid; subscriptions back to active from grace or retry.`, pts,
                    [{ name: "Conversions", value: (p) => p.conversions }, { name: "Recoveries", value: (p) => p.recoveries, color: colors[1] }], bars),
              chart("Revenue", `Prices of paid subscription transactions per ${per}, by purchase date, per currency (before Apple's commission).`, pts,
                    currencies.map((c) => ({ name: c, value: (p) => p.revenue[c] || 0 })), bars)));
          }

          function select(options, value, change) {
            const s = el("select", { onchange: (e) => change(e.target.value) },
              options.map(([v, label]) => el("option", { value: v, selected: String(v) === String(value), text: label })));
            return s;
          }

"""# + ConsoleCustomerScript.js + ConsoleChartsScript.js + ConsoleExperimentsScript.js + ConsoleOfferingScript.js + #"""
          async function health(page) {
            const body = await api("/v1/console/health");
            const window = `the last ${body.windowHours} hours, to ${when(body.serverTime)}`;
            page.append(el("h1", { text: "Health" }), el("p", { class: "muted", text: "Last " + body.windowHours + " hours, server time " + when(body.serverTime) }));
            const hourLabel = new Intl.DateTimeFormat(undefined, { hour: "numeric" });
            // Every hour of the window, those without a message at zero, so that bars stand at their hour.
            const hourMs = 3600000, end = Math.floor(Date.parse(body.serverTime) / hourMs) * hourMs;
            const byHour = new Map(body.hours.map((h) => [Date.parse(h.hour), h]));
            const start = Math.min(end - (body.windowHours - 1) * hourMs, ...byHour.keys());
            const pts = [];
            for (let t = start; t <= end; t += hourMs) {
              const h = byHour.get(t) || { accepted: 0, rejected: 0 };
              pts.push({ date: new Date(t).toISOString().slice(0, 10), hour: new Date(t).toISOString(), accepted: h.accepted, rejected: h.rejected });
            }
            const total = body.hours.reduce((a, h) => a + h.accepted + h.rejected, 0);
            const rejected = body.hours.reduce((a, h) => a + h.rejected, 0);
            page.append(el("div", { class: "cards" },
              card("health-ingested", "Messages received", total, window, "Apple's notifications and your app's transactions, accepted and rejected"),
              card("health-rejected", "Rejected", rejected, window, "Messages refused (bad signature, unknown app, …): the codes are below"),
              card("health-rate", "Per hour", (total / Math.max(1, body.windowHours)).toFixed(1), "average over " + window, "Messages received ÷ hours"),
              ...(body.playUnacknowledged == null ? [] : [card("health-play-unacknowledged", "Play purchases near the refund deadline",
                   body.playUnacknowledged, "now", "Google Play purchases 48 to 72 hours old not yet acknowledged: Google refunds them at 72 hours (docs/operations.md)")]),
              ...(body.playRefundReviewsNearDeadline == null ? [] : [card("health-play-refund-reviews", "Play refund reviews near the deadline",
                   body.playRefundReviewsNearDeadline, "now", "Google Play refund reviews 18 to 24 hours old not yet answered: Google takes answers for 24 hours (docs/operations.md)")])));
            if (total) page.append(el("div", { class: "charts" }, chart("Ingest per hour", "Messages received per hour (your time), accepted and rejected.", pts,
              [{ name: "Accepted", value: (p) => p.accepted, color: colors[1] }, { name: "Rejected", value: (p) => p.rejected, color: colors[2] }],
              { bars: true, ticks: 5, label: (p) => hourLabel.format(new Date(p.hour)), tip: (p) => when(p.hour) })));
            else page.append(nothingYet("health-empty", `No message in ${window}. Point App Store Connect's App Store Server Notifications ` +
              `URL (Production and Sandbox) at ${notificationsURL()}, or ask Apple for a test notification (docs/deploy.md).`));
            const table = (id, heads, rows) => el("table", { id }, el("tr", {}, heads.map((h) => el("th", { text: h }))), rows);
            page.append(el("div", { class: "panel" }, el("h2", { text: "Rejections by code" }),
              table("rejections", ["Code", "Count"], body.rejections.map((r) => el("tr", {}, el("td", { text: r.code }), el("td", { text: r.count })))),
              body.rejections.length ? null : nothingYet("rejections-empty", "No rejection in " + window + ".")));
            page.append(el("div", { class: "panel" }, el("h2", { text: "Last notification per app and environment" }),
              table("last-notifications", ["App", "Environment", "Received"], body.lastNotifications.map((r) =>
                el("tr", {}, el("td", { text: r.bundleId }), el("td", { text: r.environment }), el("td", { text: when(r.receivedAt) })))),
              body.lastNotifications.length ? null : nothingYet("notifications-empty",
                `No notification yet: point App Store Connect at ${notificationsURL()} (App Information, App Store Server Notifications, Version 2).`)));
            page.append(el("div", { class: "panel" }, el("h2", { text: "Reconciliation with Apple" }),
              body.reconciledApps.length ? null : nothingYet("reconciliation-empty", "No app has serverAPI configured: nothing is reconciled. " +
                "Give an app your In-App Purchase key as serverAPI (docs/configuration.md) to fetch what Apple's notifications missed."),
              table("reconciliation", ["App", "Environment", "Ingested up to", "Running now"], body.reconciliation.map((r) =>
                el("tr", {}, el("td", { text: r.bundleId }), el("td", { text: r.environment }), el("td", { text: when(r.watermark) }), el("td", { text: r.leased ? "yes" : "no" }))))));
            page.append(el("div", { class: "panel", id: "webhooks" }, el("h2", { text: "Webhooks" }),
              body.webhooks.length ? null : nothingYet("webhooks-empty", "No webhook endpoint is configured. Add one under webhooks in the " +
                "configuration to receive an event whenever a customer's answer changes (docs/operations.md#webhooks)."),
              table("webhook-status", ["Endpoint", "Pending", "Failed", "Last delivered"], body.webhooks.map((w) =>
                el("tr", {}, el("td", { text: w.endpoint }), el("td", { text: w.pending }), el("td", { text: w.failed }), el("td", { text: when(w.lastDeliveredAt) }))))));
            if (body.exports.length) page.append(el("div", { class: "panel", id: "exports" }, el("h2", { text: "Scheduled exports" }),
              table("export-status", ["Destination", "Exported up to", "Next run", "Running now", "Last error"], body.exports.map((x) =>
                el("tr", {}, el("td", { text: x.destination }), el("td", { text: when(x.watermark) }), el("td", { text: when(x.nextRunAt) }),
                  el("td", { text: x.running ? "yes" : "no" }), el("td", { text: x.lastError ? x.failures + " failed: " + x.lastError : "" }))))));
          }

          async function retention(page) {
            const body = await api("/v1/retention/save-rates?days=" + (state.retentionDays || 90));
            page.append(el("h1", { text: "Retention" }), el("p", { class: "muted", text: "Apple's retention-messaging requests of the last " +
              body.days + " days, per rule, and what became of each subscription since (server time " + when(body.serverTime) + ")" }),
              el("div", { class: "controls" }, select([30, 90, 180, 400].map((d) => [d, d + " days"]), body.days, (v) => { state.retentionDays = Number(v); route(); })));
            const pct = (r) => r.saveRate === null ? "—" : (100 * r.saveRate).toFixed(1) + " %";
            page.append(el("div", { class: "panel" }, el("h2", { text: "Save rate per rule" }),
              el("table", { id: "retention-rules" }, el("tr", {}, ["App", "Rule", "Requests", "Renewed", "Expired", "Undecided", "Save rate"].map((h) => el("th", { text: h }))),
                body.rules.map((r) => el("tr", {}, [r.bundleId, r.ruleId, r.requests, r.renewed, r.expired, r.undecided, pct(r)].map((v) => el("td", { text: v }))))),
              el("p", { class: "note", text: "Renewed: the subscription renewed (or was bought again or switched) after the answer. Expired: it ended without that. " +
                "Save rate: renewed ÷ (renewed + expired). 'default' is the rule set's default answer; 'none': nothing was answered." }),
              body.rules.length ? null : nothingYet("retention-empty", "No retention request yet. Register " + location.origin +
                "/v1/apple/retention as the Get Retention Message URL at Apple and configure apps[].retention (docs/retention.md).")));
            const setup = await api("/v1/console/retention");
            page.append(el("h2", { text: "Messages at Apple" }), el("p", { class: "muted", text: "Read live from Apple's Retention " +
              "Messaging API. Change it with entitled retention (docs/retention.md#managing-messages-from-the-cli)." }));
            if (!setup.apps.length) page.append(nothingYet("retention-setup-empty", "No app has serverAPI configured: Entitled cannot read " +
              "its retention messages. Give an app your In-App Purchase key as serverAPI (docs/configuration.md)."));
            const table = (heads, rows) => el("table", {}, el("tr", {}, heads.map((h) => el("th", { text: h }))), rows);
            for (const a of setup.apps) {
              page.append(el("div", { class: "panel retention" }, el("h3", { text: a.bundleId + " · " + a.environment }),
                a.error ? el("p", { class: "error", text: a.error }) : null,
                el("p", { text: "Realtime URL: " + (a.realtimeURL || "not configured") }),
                table(["Message", "State"], a.messages.map((m) => el("tr", {}, el("td", { text: m.messageIdentifier }), el("td", { text: m.messageState })))),
                table(["Image", "State", "Size"], a.images.map((i) => el("tr", {}, el("td", { text: i.imageIdentifier }), el("td", { text: i.imageState }), el("td", { text: i.imageSize }))))));
            }
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
              else if (name === "retention") await retention(page);
              else if (name === "experiments") await experiments(page, rest[0] ? decodeURIComponent(rest[0]) : null);
              else if (name === "offerings") await offerings(page, rest[0] ? decodeURIComponent(rest[0]) : null);
              else if (name === "charts") await charts(page, rest[0] || "revenue");
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
