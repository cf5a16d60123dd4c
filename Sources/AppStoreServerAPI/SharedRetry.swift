// The retry policy and the sleeper live with the outbound client, shared by every store's API
// client; re-exported so callers that use this client keep naming them without another import.
@_exported import protocol HTTPClient.Sleeper
@_exported import struct HTTPClient.RetryPolicy
@_exported import struct HTTPClient.TaskSleeper
