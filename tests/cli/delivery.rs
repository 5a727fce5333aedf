//! Delivery to local fakes of the chat APIs. (Being built.)
