//! `deliver` values as users type them (`--deliver`, edits, hand-written jobs.json):
//! any UTF-8 text through the one `deliver` parser. Checks that nothing panics, that a
//! value it accepts is already in its normal form (validating the output again gives
//! the same string) and that the stored text parses back to the same targets.
#![no_main]

use jobs::target::{format_deliver, parse_deliver, validate_deliver};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(normal) = validate_deliver(text) {
        assert_eq!(
            validate_deliver(&normal),
            Ok(normal.clone()),
            "validated deliver value {normal:?} (from {text:?}) is not stable"
        );
    }
    if let Ok(targets) = parse_deliver(text) {
        let stored = format_deliver(&targets);
        assert_eq!(
            parse_deliver(&stored),
            Ok(targets),
            "stored deliver value {stored:?} (from {text:?}) parses to other targets"
        );
    }
});
