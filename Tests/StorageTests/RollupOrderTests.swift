import AppStoreTesting
import Testing

@testable import Entitlements
@testable import Storage

/// The rollups' orders compare field by field; each must be the order of the tuple of its fields,
/// which the stored contributions (compared as they are stored) and every server's lock order (the
/// chart rows sorted at each commit, on PostgreSQL by several servers at once) were written in.
@Suite("Rollup orders")
struct RollupOrderTests {
    /// Few values per field, so that keys often share their first fields; canonically equivalent
    /// spellings ("é" both ways) and texts that sort apart by bytes and by characters among them.
    static func text(_ rng: inout SplitMix64) -> String {
        ["", "a", "b", "Production", "Sandbox", "é", "e\u{301}", "Z", "appStore", "pro.monthly"][Int(rng.next() % 10)]
    }

    static func chartDelta(_ rng: inout SplitMix64) -> ChartDelta {
        ChartDelta(
            environment: Environment(rawValue: text(&rng)), day: Int64(rng.next() % 3), kind: ChartKind.allCases[Int(rng.next() % 3)],
            currency: text(&rng), segment: ChartSegment(store: text(&rng), product: text(&rng), storefront: text(&rng), periodType: text(&rng)),
            offset: Int64(rng.next() % 3), value: 1)
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func eachOrderIsItsFieldsTuplesOrder(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        for _ in 0..<3_000 {
            let (a, b) = (Self.chartDelta(&rng), Self.chartDelta(&rng))
            let (sa, sb) = (a.segment, b.segment)
            #expect((sa < sb) == ((sa.store, sa.product, sa.storefront, sa.periodType) < (sb.store, sb.product, sb.storefront, sb.periodType)))
            #expect(ChartDelta.precedes(a, b)
                == ((a.environment.rawValue, a.day, a.kind.rawValue, a.currency, a.segment, a.offset)
                    < (b.environment.rawValue, b.day, b.kind.rawValue, b.currency, b.segment, b.offset)))
            let (ma, mb) = (
                MetricDelta(environment: a.environment, day: a.day, kind: MetricKind.allCases[Int(rng.next() % 3)], currency: a.currency, value: 1),
                MetricDelta(environment: b.environment, day: b.day, kind: MetricKind.allCases[Int(rng.next() % 3)], currency: b.currency, value: 1))
            #expect(MetricDelta.precedes(ma, mb)
                == ((ma.environment.rawValue, ma.day, ma.kind.rawValue, ma.currency) < (mb.environment.rawValue, mb.day, mb.kind.rawValue, mb.currency)))
            // Tuples compare up to six fields: the longer keys' tuples in two parts.
            let (ka, kb) = (ChartRowKey(a), ChartRowKey(b))
            let (headA, headB) = ((ka.environment, ka.kind, ka.day, ka.currency, ka.store, ka.product), (kb.environment, kb.kind, kb.day, kb.currency, kb.store, kb.product))
            #expect((ka < kb)
                == (headA != headB ? headA < headB : (ka.storefront, ka.periodType, ka.offset) < (kb.storefront, kb.periodType, kb.offset)))
            for (ra, rb) in zip(ChartSegmentRowKey.rows(of: ka), ChartSegmentRowKey.rows(of: kb)) {
                let (first, second) = ((ra.environment, ra.kind, ra.segmentation, ra.day, ra.currency, ra.offset), (rb.environment, rb.kind, rb.segmentation, rb.day, rb.currency, rb.offset))
                #expect((ra < rb) == (first != second ? first < second : ra.segment < rb.segment))
            }
        }
    }
}
