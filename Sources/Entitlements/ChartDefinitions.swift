// What each chart counts, in words: served with the chart and shown on its console page
// (docs/charts.md says the same at length).

extension ChartID {
    /// The chart's family: the console page it is shown on.
    public var family: String {
        switch self {
        case .revenue, .mrr, .arr, .mrrMovement: "revenue"
        case .actives, .activesMovement, .customersNew, .churn: "subscribers"
        case .trials, .trialsMovement, .trialConversionRate, .conversionToPaying: "conversion"
        case .subscriptionRetention, .ltvPerCustomer, .ltvPerPayingCustomer, .refundRate: "cohorts"
        }
    }

    /// What is counted, in which window and currency.
    public var definition: String {
        switch self {
        case .revenue:
            "Paid transactions (every product type; free trials excluded) by purchase date: gross is their price, proceeds the price after the App Store's commission (30 % in a subscription's first paid year, 15 % after; other products 30 %), refunds the refunded transactions' prices by refund date, net gross less refunds. Per currency, and converted to the reporting currency where a rate is configured."
        case .mrr:
            "Monthly recurring revenue at the end of each period's last day (UTC): every subscription whose answer then grants paid access (active or in grace period, not in a free trial), its current price as a monthly amount (weekly × 52/12, longer periods divided by their months). Per currency and converted."
        case .arr:
            "Annual recurring revenue: the MRR at the end of each period's last day × 12. Per currency and converted."
        case .mrrMovement:
            "Changes of MRR within the period, from the day-end answers: new (a subscription's first paid access), reactivated (paid access again after a lapse), expansion and contraction (a paid subscription's monthly amount rising or falling: upgrades, downgrades, offers ending), churned (paid access ending: expiry, refund, billing retry) and net. Per currency and converted."
        case .actives:
            "Subscriptions whose answer at the end of each period's last day (UTC) grants paid access: active or in the billing grace period, not in a free trial."
        case .activesMovement:
            "Subscriptions starting paid access for the first time (new), starting it again after a lapse (reactivated) and losing it (churned, negative) within the period, from the day-end answers; net is their sum."
        case .customersNew:
            "Customers by the day of their first transaction in the environment (any product, a free trial included)."
        case .trials:
            "Subscriptions whose answer at the end of each period's last day grants access in a free trial."
        case .trialsMovement:
            "Free trials starting (new), becoming paid (converted, negative) and ending without a payment (expired, negative) within the period, from the day-end answers; net is their sum."
        case .trialConversionRate:
            "By trial start cohort: subscriptions whose first free trial started in the period (trials), those later followed by a paid transaction of the same subscription (converted, counted whenever it happens, up to now), and converted ÷ trials."
        case .conversionToPaying:
            "By first-seen cohort: customers whose first transaction was in the period (customers), those with a paid transaction not refunded by now (paying), and paying ÷ customers."
        case .subscriptionRetention:
            "By start cohort: subscriptions whose first paid transaction was in the period, and for each month k since (month_k) the share a paid, unrefunded transaction covers exactly k calendar months after that purchase; month_k is shown once the period's last day plus k months is today or earlier (UTC)."
        case .ltvPerCustomer:
            "Realized lifetime value by first-seen cohort: the prices of the cohort's paid transactions not refunded, up to now, divided by the cohort's customers. Per currency and converted."
        case .ltvPerPayingCustomer:
            "Realized lifetime value by first-seen cohort: the prices of the cohort's paid transactions not refunded, up to now, divided by its paying customers. Per currency and converted."
        case .churn:
            "Subscriptions losing paid access within the period (churned) ÷ those with paid access at the end of the day before it (activesAtStart), from the day-end answers."
        case .refundRate:
            "By purchase cohort: paid transactions bought in the period (transactions), those refunded since (refunded, an upgrade's replacement not counted), and refunded ÷ transactions."
        }
    }
}
