#!/usr/bin/env python3
"""Writes the texts dictionary 2 is built from (scripts/ledger-dictionary/make.sh): for each of
400 notifications, the fact JSON of its notification, transaction and renewal as the projectors
write them (sorted keys) and the literals of their signed texts (Apple's payloads, in Apple's
member order, the nested texts cut out), as `DIR/NNNN{n,t,r}.{json,lit}`.

Deterministic (a fixed seed). The values are deliberately not the benchmarks' or the tests'
(another bundle, products, prices, ids): a dictionary that held those would flatter the
measured bytes."""
import random, sys, uuid, os

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = random.Random(20261206)
kinds = [("SUBSCRIBED", "INITIAL_BUY"), ("SUBSCRIBED", "RESUBSCRIBE"), ("DID_RENEW", ""), ("DID_RENEW", "BILLING_RECOVERY"),
         ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"), ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED"),
         ("EXPIRED", "VOLUNTARY"), ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"), ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"), ("REFUND", "")]
products = ["org.acme.reader.premium.yearly", "org.acme.reader.plus.monthly", "org.acme.reader.premium.weekly"]
stores = [("USA", "143441", "USD", 4990), ("GBR", "143444", "GBP", 3990), ("DEU", "143443", "EUR", 4490), ("JPN", "143462", "JPY", 700)]
for i in range(400):
    ntype, subtype = kinds[i % len(kinds)]
    product = products[rng.randrange(len(products))]
    store, store_id, currency, price = stores[rng.randrange(len(stores))]
    otid = str(430_001_234_567_000 + rng.randrange(10**9))
    tid = otid if ntype == "SUBSCRIBED" else str(int(otid) + rng.randrange(1, 10**6))
    now = 1_701_234_567_890 + rng.randrange(10**10)
    expires = now + 2_592_000_000
    note = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    token = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    web = str(460_000_987_000_000 + rng.randrange(10**9))
    app = str(705_000_000_000_000 + rng.randrange(10**9))
    auto = 0 if subtype in ("AUTO_RENEW_DISABLED", "VOLUNTARY") else 1
    sub = f'"subtype":"{subtype}",' if subtype else ""
    t = (f'{{"transactionId":"{tid}","originalTransactionId":"{otid}","webOrderLineItemId":"{web}","bundleId":"org.acme.reader",'
         f'"productId":"{product}","subscriptionGroupIdentifier":"20987654","purchaseDate":{now},"originalPurchaseDate":{now - 86_400_000},'
         f'"expiresDate":{expires},"quantity":1,"type":"Auto-Renewable Subscription","appAccountToken":"{token}",'
         f'"inAppOwnershipType":"PURCHASED","signedDate":{now},"environment":"Production","transactionReason":"'
         f'{"PURCHASE" if ntype == "SUBSCRIBED" else "RENEWAL"}","storefront":"{store}","storefrontId":"{store_id}","price":{price * 10},'
         f'"currency":"{currency}","appTransactionId":"{app}"}}')
    r = (f'{{"originalTransactionId":"{otid}","autoRenewProductId":"{product}","productId":"{product}","autoRenewStatus":{auto},'
         f'"renewalPrice":{price * 10},"currency":"{currency}","signedDate":{now},"environment":"Production",'
         f'"recentSubscriptionStartDate":{now - 86_400_000},"renewalDate":{expires},"appTransactionId":"{app}"}}')
    n = (f'{{"notificationType":"{ntype}",{sub}"notificationUUID":"{note}","data":{{"appAppleId":6449012345,'
         f'"bundleId":"org.acme.reader","bundleVersion":"7","environment":"Production","signedTransactionInfo":"",'
         f'"signedRenewalInfo":"","status":{1 if ntype != "EXPIRED" else 2}}},"version":"2.0","signedDate":{now}}}')
    tf = (f'{{"fact":{{"appAccountToken":"{token}","environment":"Production","expiresDate":{expires},"isUpgraded":false,'
          f'"originalTransactionId":"{otid}","ownership":"purchased","productId":"{product}","productType":"autoRenewable",'
          f'"purchaseDate":{now},"quantity":1,"signedDate":{now},"transactionId":"{tid}"}},"kind":"transaction"}}')
    rf = (f'{{"fact":{{"autoRenewStatus":{"true" if auto else "false"},"eligibleWinBackOfferIds":[],"environment":"Production",'
          f'"originalTransactionId":"{otid}","productId":"{product}","signedDate":{now}}},"kind":"renewalInfo"}}')
    nsub = f'"subtype":"{subtype}",' if subtype else ""
    nf = (f'{{"fact":{{"environment":"Production","notificationUUID":"{note}","originalTransactionId":"{otid}",'
          f'"productId":"{product}","signedDate":{now},{nsub}"transactionId":"{tid}","type":"{ntype}"}},"kind":"notification"}}')
    for kind, json, literals in (("n", nf, n), ("t", tf, t), ("r", rf, r)):
        with open(f"{out}/{i:04d}{kind}.json", "w") as f: f.write(json)
        with open(f"{out}/{i:04d}{kind}.lit", "w") as f: f.write(literals)
