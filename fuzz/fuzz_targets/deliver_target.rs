//! `deliver` values as users type them (`--deliver`, edits, hand-written jobs.json):
//! any UTF-8 text through `validate_deliver`. Checks that nothing panics and that a
//! value it accepts is already in its normal form (validating the output again gives
//! the same string).
#![no_main]

use jobs::deliver::validate_deliver;
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
});
