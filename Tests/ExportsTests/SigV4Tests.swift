import EntitledCrypto
import Foundation
import Testing

@testable import Exports

/// AWS Signature Version 4 against AWS's published examples: the IAM example of the general
/// reference (`iam.amazonaws.com`, 2015-08-30) and the S3 header-signing examples of the S3 API
/// reference (`examplebucket`, 2013-05-24).
@Suite struct SigV4Tests {
    /// 2013-05-24T00:00:00Z, the S3 examples' instant.
    static let s3Date = Date(timeIntervalSince1970: 1_369_353_600)
    /// 2015-08-30T12:36:00Z, the general reference's instant.
    static let iamDate = Date(timeIntervalSince1970: 1_440_938_160)
    static let s3Signer = SigV4Signer(
        credentials: AWSCredentials(accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1")
    static let host = "examplebucket.s3.amazonaws.com"

    @Test func timestampsAreUTC() {
        #expect(SigV4Signer.timestamp(Self.s3Date) == "20130524T000000Z")
        #expect(SigV4Signer.timestamp(Self.iamDate) == "20150830T123600Z")
        #expect(SigV4Signer.day(Self.iamDate) == "20150830")
    }

    @Test func signingKeyOfTheGeneralReference() throws {
        let key = try SigV4Signer.signingKey(
            secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", day: "20150830", region: "us-east-1", service: "iam")
        #expect(Hex.encode(key) == "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9")
    }

    @Test func getObjectWithRange() throws {
        let request = SigV4Signer.Request(
            method: "GET", encodedPath: SigV4Signer.encodePath("/test.txt"), headers: ["Host": Self.host, "Range": "bytes=0-9"],
            payloadHash: SigV4Signer.emptyPayloadHash)
        let headers = try Self.s3Signer.sign(request, at: Self.s3Date)
        var complete = request
        complete.headers = headers.filter { $0.key != "Authorization" }
        let canonical = SigV4Signer.canonicalRequest(complete)
        #expect(
            canonical.text == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        #expect(
            Self.s3Signer.stringToSign(canonicalRequest: canonical.text, at: Self.s3Date) == """
                AWS4-HMAC-SHA256
                20130524T000000Z
                20130524/us-east-1/s3/aws4_request
                7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
                """)
        #expect(
            headers["Authorization"]
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test func putObjectWithAnEncodedKeyAndABody() throws {
        let body = Array("Welcome to Amazon S3.".utf8)
        let hash = Hex.encode(SHA256.hash(body))
        #expect(hash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let request = SigV4Signer.Request(
            method: "PUT", encodedPath: SigV4Signer.encodePath("/test$file.text"),
            headers: ["Host": Self.host, "Date": "Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class": "REDUCED_REDUNDANCY"],
            payloadHash: hash)
        #expect(request.encodedPath == "/test%24file.text")
        let headers = try Self.s3Signer.sign(request, at: Self.s3Date)
        #expect(headers["Authorization"]?.hasSuffix(
            "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
                + "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd") == true)
    }

    @Test func getBucketLifecycleWithAnEmptyQueryValue() throws {
        let request = SigV4Signer.Request(
            method: "GET", encodedPath: "/", query: [("lifecycle", "")], headers: ["Host": Self.host],
            payloadHash: SigV4Signer.emptyPayloadHash)
        let headers = try Self.s3Signer.sign(request, at: Self.s3Date)
        #expect(headers["Authorization"]?.hasSuffix("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") == true)
    }

    @Test func listObjectsWithTheQuerySorted() throws {
        let request = SigV4Signer.Request(
            method: "GET", encodedPath: "/", query: [("prefix", "J"), ("max-keys", "2")], headers: ["Host": Self.host],
            payloadHash: SigV4Signer.emptyPayloadHash)
        #expect(SigV4Signer.canonicalQuery(request.query) == "max-keys=2&prefix=J")
        let headers = try Self.s3Signer.sign(request, at: Self.s3Date)
        #expect(headers["Authorization"]?.hasSuffix("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)
    }

    /// The signature test suite's `get-vanilla`: no `x-amz-content-sha256` (not S3).
    @Test func getVanillaOfTheSignatureTestSuite() throws {
        let signer = SigV4Signer(
            credentials: AWSCredentials(accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1", service: "service")
        let request = SigV4Signer.Request(
            method: "GET", encodedPath: "/", headers: ["Host": "example.amazonaws.com"], payloadHash: SigV4Signer.emptyPayloadHash)
        let headers = try signer.sign(request, at: Self.iamDate, contentHashHeader: false)
        #expect(headers["x-amz-content-sha256"] == nil)
        #expect(
            headers["Authorization"]
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request,SignedHeaders=host;x-amz-date,"
                + "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
    }

    @Test func aSessionTokenIsSentAndSigned() throws {
        var signer = Self.s3Signer
        signer.credentials.sessionToken = "token/with+symbols="
        let request = SigV4Signer.Request(
            method: "GET", encodedPath: "/test.txt", headers: ["Host": Self.host], payloadHash: SigV4Signer.emptyPayloadHash)
        let headers = try signer.sign(request, at: Self.s3Date)
        #expect(headers["x-amz-security-token"] == "token/with+symbols=")
        #expect(headers["Authorization"]?.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") == true)
        // The token is part of what is signed: without it the signature differs.
        let unsigned = try Self.s3Signer.sign(request, at: Self.s3Date)
        #expect(unsigned["Authorization"] != headers["Authorization"])
        #expect(!signer.credentials.description.contains(signer.credentials.secretAccessKey))
    }

    @Test func headerValuesAreTrimmedAndSpacesCollapsed() {
        let request = SigV4Signer.Request(
            method: "GET", encodedPath: "/", headers: ["X-Custom": "  a   b  c ", "host": "h"], payloadHash: "p")
        #expect(SigV4Signer.canonicalRequest(request).text == "GET\n/\n\nhost:h\nx-custom:a b c\n\nhost;x-custom\np")
    }

    @Test func pathsAndQueriesEncodeEveryReservedByte() {
        #expect(SigV4Signer.encodePath("/bucket/a b/ü+=.csv") == "/bucket/a%20b/%C3%BC%2B%3D.csv")
        #expect(SigV4Signer.canonicalQuery([("uploadId", "a/b+c="), ("partNumber", "2")]) == "partNumber=2&uploadId=a%2Fb%2Bc%3D")
    }
}
