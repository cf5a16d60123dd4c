import AppStore
import AppStoreTesting
import struct Entitlements.NotificationType
import struct Entitlements.V1NotificationType
import struct Entitlements.NotificationSubtype
import Foundation
import Testing

@Suite("Open enumerations")
struct EnumerationTests {
    @Test func notificationTypesAreComplete() {
        #expect(NotificationType.allDocumented.count == 23)
        #expect(Set(NotificationType.allDocumented.map(\.rawValue)).count == 23)
        #expect(V1NotificationType.allDocumented.count == 12)
        #expect(Set(V1NotificationType.allDocumented.map(\.rawValue)).count == 12)
        #expect(!V1NotificationType.allDocumented.contains(V1NotificationType(rawValue: "RENEWAL")))
        let subtypes = Set(NotificationSubtype.allDocumented.map(\.rawValue))
        #expect(subtypes.count == NotificationSubtype.allDocumented.count)
        for subtype in ["CREATED", "ACTIVE_TOKEN_REMINDER", "UNREPORTED", "SUMMARY", "FAILURE", "BILLING_RECOVERY"] {
            #expect(subtypes.contains(subtype))
        }
    }

    @Test func aRetentionOfferDecodesInTransactionsAndRenewalInfos() throws {
        let transaction = try AppStoreJSON.decode(
            JWSTransactionDecodedPayload.self, from: json(#"{"offerType":5,"offerIdentifier":"stay50","offerDiscountType":"PAY_AS_YOU_GO"}"#))
        #expect(transaction.offerType == .retentionOffer && transaction.offerType?.isKnown == true)
        let renewal = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: json(#"{"offerType":5,"offerIdentifier":"stay50"}"#))
        #expect(renewal.offerType == .retentionOffer && renewal.offerType?.isKnown == true)
        #expect(try roundTrip(transaction) == transaction)
    }

    @Test func unknownValuesDecodeAndRoundTrip() throws {
        let body = json(
            """
            {"type":"Gift Card","offerType":9,"environment":"Staging","inAppOwnershipType":"BORROWED",
             "revocationType":"REFUND_PARTIAL","revocationReason":7,"offerDiscountType":"HALF_OFF",
             "transactionReason":"GIFT","billingPlanType":"QUARTERLY"}
            """)
        let transaction = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: body)
        #expect(transaction.type?.rawValue == "Gift Card")
        #expect(transaction.offerType?.rawValue == 9)
        #expect(transaction.environment?.rawValue == "Staging")
        #expect(transaction.inAppOwnershipType?.rawValue == "BORROWED")
        #expect(transaction.revocationType?.rawValue == "REFUND_PARTIAL")
        #expect(transaction.revocationReason?.rawValue == 7)
        #expect(transaction.offerDiscountType?.rawValue == "HALF_OFF")
        #expect(transaction.transactionReason?.rawValue == "GIFT")
        #expect(transaction.billingPlanType?.rawValue == "QUARTERLY")
        #expect(transaction.type?.isKnown == false && transaction.offerType?.isKnown == false)
        #expect(try roundTrip(transaction) == transaction)

        let notification = try AppStoreJSON.decode(
            ResponseBodyV2DecodedPayload.self,
            from: json(#"{"notificationType":"SOMETHING_NEW","subtype":"NEWER","data":{"status":9}}"#))
        #expect(notification.notificationType == NotificationType(rawValue: "SOMETHING_NEW"))
        #expect(notification.subtype == NotificationSubtype(rawValue: "NEWER"))
        #expect(notification.data?.status == SubscriptionStatus(rawValue: 9))
        let encoded = try encodedString(notification)
        #expect(encoded == #"{"data":{"status":9},"notificationType":"SOMETHING_NEW","subtype":"NEWER"}"#)

        let renewal = try AppStoreJSON.decode(
            JWSRenewalInfoDecodedPayload.self,
            from: json(#"{"expirationIntent":42,"autoRenewStatus":3,"priceIncreaseStatus":8}"#))
        #expect(renewal.expirationIntent?.rawValue == 42)
        #expect(renewal.autoRenewStatus?.rawValue == 3)
        #expect(renewal.priceIncreaseStatus?.rawValue == 8)
        #expect(try roundTrip(renewal) == renewal)
    }

    @Test func enumerationsEncodeAsTheirRawValue() throws {
        #expect(try encodedString([OfferType.winBackOffer]) == "[4]")
        #expect(try encodedString([ProductType.nonRenewingSubscription]) == #"["Non-Renewing Subscription"]"#)
        #expect(try encodedString([AppStoreEnvironment.localTesting]) == #"["LocalTesting"]"#)
        #expect(NotificationSubtype.activeTokenReminder.description == "ACTIVE_TOKEN_REMINDER")
    }

    @Test func apiErrorCodeRetryability() {
        #expect(APIErrorCode.rateLimitExceeded.isRetryable)
        #expect(APIErrorCode.generalInternalRetryable.isRetryable)
        #expect(APIErrorCode.originalTransactionIdNotFoundRetryable.isRetryable)
        #expect(!APIErrorCode.transactionIdNotFound.isRetryable)
        #expect(!APIErrorCode(rawValue: 9_990_000).isRetryable)
    }
}

@Suite("Epoch-millisecond dates")
struct DateFieldTests {
    @Test(arguments: [
        ("1698148900000", Int64(1_698_148_900_000)),
        ("1697679936049.7297", 1_697_679_936_049),
        ("1697679936049.9999", 1_697_679_936_049),
        ("-62135769600000", -62_135_769_600_000),
        ("-1.5", -2),
        ("0", 0),
        ("0.5", 0),
        ("9223372036854775807", Int64.max),
        ("1e3", 1000),
    ])
    func numbersDecodeFlooredToWholeMilliseconds(literal: String, expected: Int64) throws {
        let transaction = try AppStoreJSON.decode(
            JWSTransactionDecodedPayload.self, from: json(#"{"signedDate":\#(literal)}"#))
        #expect(transaction.signedDate == expected)
    }

    @Test func absentAndNullAreNil() throws {
        #expect(try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: json("{}")).signedDate == nil)
        #expect(
            try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: json(#"{"signedDate":null}"#)).signedDate
                == nil)
    }

    @Test(arguments: [#""1698148900000""#, "true", "1e300", "9223372036854775808.5", "[1]", #"{"ms":1}"#])
    func nonNumbersAndOutOfRangeFail(literal: String) {
        #expect(throws: AppStoreDecodingError.self) {
            try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: json(#"{"signedDate":\#(literal)}"#))
        }
    }

    @Test func nilFieldsAreOmittedWhenEncoding() throws {
        let transaction = JWSTransactionDecodedPayload(transactionId: "1", purchaseDate: 5)
        #expect(try encodedString(transaction) == #"{"purchaseDate":5,"transactionId":"1"}"#)
        #expect(try encodedString(JWSRenewalInfoDecodedPayload()) == "{}")
    }
}

/// A body that must fail to decode, and the field the error must name (nil: Foundation gives no path).
struct MalformedCase: Sendable, CustomTestStringConvertible {
    let body: String
    let fieldPath: String?
    let decode: @Sendable (Data) throws -> Void

    static func of<T: Decodable & Sendable>(_: T.Type, _ body: String, _ fieldPath: String?) -> MalformedCase {
        MalformedCase(body: body, fieldPath: fieldPath) { data in _ = try AppStoreJSON.decode(T.self, from: data) }
    }

    var testDescription: String { "\(body) -> \(fieldPath ?? "(no path)")" }
}

@Suite("Strict types")
struct StrictTypeTests {
    @Test(arguments: [
        MalformedCase.of(JWSTransactionDecodedPayload.self, #"{"price":"10990"}"#, "price"),
        .of(JWSTransactionDecodedPayload.self, #"{"isUpgraded":"true"}"#, "isUpgraded"),
        // Foundation reports a fraction in an integer field as invalid JSON without a coding path.
        .of(JWSTransactionDecodedPayload.self, #"{"quantity":1.5}"#, nil),
        .of(JWSTransactionDecodedPayload.self, #"{"offerType":"1"}"#, "offerType"),
        .of(JWSTransactionDecodedPayload.self, #"{"environment":5}"#, "environment"),
        .of(JWSTransactionDecodedPayload.self, #"{"transactionId":23456}"#, "transactionId"),
        .of(
            JWSTransactionDecodedPayload.self, #"{"commitmentInfo":{"commitmentPrice":"1"}}"#,
            "commitmentInfo.commitmentPrice"),
        .of(JWSRenewalInfoDecodedPayload.self, #"{"eligibleWinBackOfferIds":"a"}"#, "eligibleWinBackOfferIds"),
        .of(JWSRenewalInfoDecodedPayload.self, #"{"autoRenewStatus":true}"#, "autoRenewStatus"),
        .of(AppTransaction.self, #"{"appAppleId":"blue"}"#, "appAppleId"),
        .of(ResponseBodyV2DecodedPayload.self, #"{"data":{"appAppleId":"blue"}}"#, "data.appAppleId"),
        .of(
            ResponseBodyV2DecodedPayload.self, #"{"summary":{"storefrontCountryCodes":[1]}}"#,
            "summary.storefrontCountryCodes[0]"),
        .of(HistoryResponse.self, #"{"hasMore":1}"#, "hasMore"),
        .of(
            StatusResponse.self, #"{"data":[{"lastTransactions":[{"status":"1"}]}]}"#,
            "data[0].lastTransactions[0].status"),
        .of(APIErrorResponse.self, #"{"errorCode":"4040010"}"#, "errorCode"),
        .of(UnifiedReceipt.self, #"{"status":"0"}"#, "status"),
        .of(ResponseBodyV1.self, #"{"expiration_intent":true}"#, "expiration_intent"),
        .of(ResponseBodyV1.self, #"{"unified_receipt":{"latest_receipt_info":[{"purchase_date_ms":1}]}}"#,
            "unified_receipt.latest_receipt_info[0].purchase_date_ms"),
    ])
    func wrongTypesFailNamingTheField(testCase: MalformedCase) {
        do {
            try testCase.decode(json(testCase.body))
            Issue.record("decoded \(testCase.body)")
        } catch let error as AppStoreDecodingError {
            if let fieldPath = testCase.fieldPath {
                #expect(error.fieldPath == fieldPath)
                #expect(error.description.contains(fieldPath))
            }
        } catch {
            Issue.record("unexpected error type \(error)")
        }
    }

    @Test func unknownFieldsAreIgnored() throws {
        let transaction = try AppStoreJSON.decode(
            JWSTransactionDecodedPayload.self,
            from: json(#"{"transactionId":"1","deviceVerification":"x","somethingNew":{"a":[1,2]}}"#))
        #expect(transaction == JWSTransactionDecodedPayload(transactionId: "1"))
    }

    @Test func invalidJSONIsAReadableError() {
        do {
            _ = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: json("{"))
            Issue.record("decoded invalid JSON")
        } catch {
            #expect(error.typeName == "ResponseBodyV2DecodedPayload")
            #expect(error.fieldPath.isEmpty)
            #expect(error.description.hasPrefix("ResponseBodyV2DecodedPayload: "))
        }
    }

    @Test func errorDescriptionNamesTypeAndPath() {
        do {
            _ = try AppStoreJSON.decode(
                ResponseBodyV2DecodedPayload.self, from: json(#"{"data":{"appAppleId":"blue"}}"#))
            Issue.record("decoded a string appAppleId")
        } catch {
            #expect(error.description.hasPrefix("ResponseBodyV2DecodedPayload.data.appAppleId: Expected to decode Int64"))
        }
    }
}
