/// The console's experiments page (part of `/console/console.js`, see ``ConsoleScript``): the
/// experiments from `GET /v1/experiments`, and one experiment's results per variant and horizon
/// from `GET /v1/experiments/{experimentId}/results`, with their intervals and a plain "not
/// enough data" below the threshold.
enum ConsoleExperimentsScript {
    static let js = #"""
          // ---- experiments ----
          async function experiments(page, id) {
            if (id) return experimentResults(page, id);
            const body = await api("/v1/experiments");
            page.append(el("h1", { text: "Experiments" }), el("p", { class: "muted", text: "Offerings split between an audience by weight " +
              "(docs/offerings.md#5-experiment). Managed through the API: PUT /v1/experiments/{experimentId}." }));
            if (!body.experiments.length) return page.append(nothingYet("experiments-empty", "No experiment yet. Create two offerings, then " +
              "PUT /v1/experiments/{experimentId} with their ids and weights (docs/offerings.md#5-experiment)."));
            page.append(el("table", { id: "experiments" }, el("tr", {}, ["Experiment", "Status", "Variants", "Changed"].map((h) => el("th", { text: h }))),
              body.experiments.map((x) => el("tr", {}, el("td", {}, el("a", { href: "#experiments/" + encodeURIComponent(x.id), text: x.id })),
                el("td", { text: x.status }), el("td", { text: x.variants.map((v) => v.offeringId + " (" + v.weight + ")").join(", ") }),
                el("td", { text: when(x.updatedAt) })))));
          }

          async function experimentResults(page, id) {
            const body = await api("/v1/experiments/" + encodeURIComponent(id) + "/results");
            page.append(el("h1", { text: "Experiment " + body.experimentId }),
              el("p", { class: "muted", text: body.status + " · computed " + when(body.computedAt) + (body.partial ? " · the first 100,000 customers only" : "") }));
            if (!body.enoughData) page.append(el("p", { class: "empty", id: "experiment-not-enough", text: "Not enough data yet: every variant needs " +
              body.minimumCustomers + " customers enrolled at least 7 days ago before these figures mean anything. Read nothing into the differences below." }));
            const pct = (p) => (100 * p.rate).toFixed(1) + " % (" + (100 * p.low).toFixed(1) + "–" + (100 * p.high).toFixed(1) + ")";
            const means = (list) => list.length ? list.map((m) => money(m.mean, m.currency) + " (" + money(m.low, m.currency) + "–" + money(m.high, m.currency) + ")").join(", ") : "—";
            for (const [index, days] of body.horizonDays.entries()) {
              page.append(el("div", { class: "panel" }, el("h2", { text: days + " days after enrolment" }),
                el("table", { id: "experiment-" + days }, el("tr", {}, ["Variant", "Customers", "Trials started", "Trial conversions", "Paid conversions",
                  "Revenue per customer", "Realized revenue per customer"].map((h) => el("th", { text: h }))),
                  body.variants.map((v) => { const h = v.horizons[index]; return el("tr", {}, el("td", { text: v.index + ": " + v.offeringId + " (" + v.weight + ")" }),
                    el("td", { text: h.customers + " of " + v.customers + (h.enoughData ? "" : " — not enough data") }),
                    [h.trialsStarted, h.trialConversions, h.paidConversions].map((p) => el("td", { text: p.count + " · " + pct(p) })),
                    el("td", { text: means(h.revenuePerCustomer) }), el("td", { text: means(h.realizedRevenuePerCustomer) })); }))));
            }
            page.append(el("p", { class: "note", text: body.method }));
          }

"""#
}
