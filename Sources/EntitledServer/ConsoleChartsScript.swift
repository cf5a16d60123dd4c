/// The console's chart pages (part of `/console/console.js`, see ``ConsoleScript``): one page per
/// chart family from `GET /v1/charts/{chart}`, each chart with its definition and a CSV download;
/// cohort charts as heat-map tables.
enum ConsoleChartsScript {
    static let js = #"""
          // ---- chart pages ----
          const chartFamilies = {
            revenue: { title: "Revenue", charts: ["revenue", "mrr", "arr", "mrr_movement"] },
            subscribers: { title: "Subscribers", charts: ["actives", "actives_movement", "customers_new", "churn"] },
            conversion: { title: "Trials and conversion", charts: ["trials", "trials_movement", "trial_conversion_rate", "conversion_to_paying"] },
            cohorts: { title: "Cohorts", charts: ["subscription_retention", "ltv_per_customer", "ltv_per_paying_customer", "refund_rate"] },
          };
          const cohortCharts = ["trial_conversion_rate", "conversion_to_paying", "subscription_retention", "ltv_per_customer",
                                "ltv_per_paying_customer", "refund_rate"];
          const chartState = { range: 90, interval: "week", segment: "" };

          // A point's column: its series, with its currency (and "converted") for money.
          const pointColumn = (p) => p.series + (p.currency ? " " + (p.converted ? "all in " : "") + p.currency : "");
          const isRate = (series) => series === "rate" || series.startsWith("month_");

          async function chartCSV(path, name) {
            const response = await fetch(path, { headers: { Authorization: "Bearer " + sessionStorage.getItem(KEY), Accept: "text/csv" }, cache: "no-store" });
            if (!response.ok) throw new Error("CSV: " + response.status);
            const link = el("a", { href: URL.createObjectURL(await response.blob()), download: name + ".csv" });
            document.body.append(link); link.click(); link.remove();
          }

          // A cohort chart as a table: a row per cohort (and segment), a column per series; rates
          // shaded by their value (a heat map).
          function cohortTable(id, body) {
            const columns = [...new Set(body.points.map(pointColumn))];
            columns.sort((a, b) => (a.startsWith("month_") && b.startsWith("month_")) ? Number(a.slice(6).split(" ")[0]) - Number(b.slice(6).split(" ")[0]) : 0);
            const rows = new Map();
            for (const p of body.points) {
              const key = p.date + "\u0000" + (p.segment ?? "");
              if (!rows.has(key)) rows.set(key, { date: p.date, segment: p.segment, cells: {} });
              rows.get(key).cells[pointColumn(p)] = p;
            }
            const heads = ["Cohort"].concat(body.segment ? [body.segment] : [], columns);
            return el("table", { id: "chart-" + id, class: "heat" }, el("tr", {}, heads.map((h) => el("th", { text: h }))),
              [...rows.values()].sort((a, b) => a.date < b.date ? -1 : 1).map((r) => el("tr", {},
                el("td", { text: longDay.format(utcDay(r.date)) }), body.segment ? el("td", { text: r.segment || "—" }) : null,
                columns.map((c) => {
                  const p = r.cells[c];
                  if (!p) return el("td", { text: "" });
                  const rate = isRate(p.series);
                  const td = el("td", { "data-value": p.value, text: rate ? (100 * p.value).toFixed(1) + " %" : p.currency ? money(p.value, p.currency) : fmt(p.value) });
                  // Through the CSSOM: the page's policy refuses style attributes.
                  if (rate) td.style.backgroundColor = `rgba(37, 99, 235, ${(0.08 + 0.72 * Math.max(0, Math.min(1, p.value))).toFixed(2)})`;
                  return td;
                }))));
          }

          // A period chart as lines (levels, money) or bars (counts of a movement), one series per
          // column (and segment), at most eight.
          // Every period's first day from `from` to `to`: a period without a point is drawn at zero.
          function periodDates(from, to, interval) {
            const out = [];
            for (let d = utcDay(from); d <= utcDay(to);) {
              out.push(isoDay(d));
              const n = new Date(d);
              if (interval === "day") n.setUTCDate(n.getUTCDate() + 1);
              else if (interval === "week") n.setUTCDate(n.getUTCDate() + ((8 - n.getUTCDay()) % 7 || 7));
              else n.setUTCMonth(n.getUTCMonth() + 1, 1);
              d = n;
            }
            return out;
          }

          function periodChart(body) {
            const dates = periodDates(body.from, body.to, body.interval);
            const keys = [...new Set(body.points.map((p) => pointColumn(p) + (p.segment != null ? " · " + (p.segment || "—") : "")))].slice(0, 8);
            const values = new Map();
            for (const p of body.points) values.set(p.date + "\u0000" + pointColumn(p) + (p.segment != null ? " · " + (p.segment || "—") : ""), p.value);
            const pts = dates.map((date) => ({ date }));
            // Drawn as sizes: a movement's churned or expired series (negative in the data) as positive bars.
            const series = keys.map((k) => ({ name: k, value: (p) => Math.abs(values.get(p.date + "\u0000" + k) || 0) }));
            const counts = !body.points.some((p) => p.currency);
            return chart(body.chart, body.definition, pts, series,
                         counts && body.chart.endsWith("movement") ? { bars: true } : { whole: counts });
          }

          async function charts(page, family) {
            const f = chartFamilies[family] || chartFamilies.revenue;
            if (!state.serverTime) state.serverTime = (await api("/v1/console/health")).serverTime;
            const to = new Date(state.serverTime); const from = new Date(to.getTime() - (chartState.range - 1) * 86400000);
            page.append(el("h1", { text: "Charts: " + f.title }),
              el("div", { class: "controls", id: "chart-families" }, Object.entries(chartFamilies).map(([k, v]) =>
                el("a", { href: "#charts/" + k, class: k === family ? "on" : null, text: v.title }))),
              el("div", { class: "controls" },
                select([30, 90, 365, 730].map((d) => [d, d + " days"]), chartState.range, (v) => { chartState.range = Number(v); route(); }),
                select([["day", "by day"], ["week", "by week"], ["month", "by month"]], chartState.interval, (v) => { chartState.interval = v; route(); }),
                select([["", "no segments"], ["product", "by product"], ["storefront", "by storefront"], ["periodType", "by period type"],
                        ["store", "by store"], ["environment", "by environment"]], chartState.segment, (v) => { chartState.segment = v; route(); }),
                select([["Production", "Production"], ["Sandbox", "Sandbox"], ["Xcode", "Xcode"], ["LocalTesting", "LocalTesting"]],
                       state.environment, (v) => { state.environment = v; state.environmentChosen = true; route(); })));
            let q = `from=${isoDay(from)}&to=${isoDay(to)}&interval=${chartState.interval}`;
            q += chartState.segment === "environment" ? "&segment=environment" : `&environment=${state.environment}` + (chartState.segment ? "&segment=" + chartState.segment : "");
            const bodies = await Promise.all(f.charts.map((id) => api(`/v1/charts/${id}?${q}`)));
            const grid = el("div", { class: "charts" });
            for (const body of bodies) {
              const path = `/v1/charts/${body.chart}?${q}`;
              const download = el("button", { type: "button", class: "csv", onclick: () => chartCSV(path, body.chart).catch((e) => alert(e.message)), text: "CSV" });
              if (cohortCharts.includes(body.chart)) {
                page.append(el("div", { class: "panel", id: "panel-" + body.chart }, el("h2", { text: body.chart }, " ", download),
                  el("p", { class: "note", text: body.definition }),
                  body.points.length ? cohortTable(body.chart, body) : nothingYet("empty-" + body.chart, "No cohort in this range yet.")));
              } else {
                const c = periodChart(body);
                c.id = "panel-" + body.chart;
                c.querySelector("h2").append(" ", download);
                grid.append(c);
              }
            }
            page.insertBefore(grid, page.querySelector(".panel"));
          }
"""#
}
