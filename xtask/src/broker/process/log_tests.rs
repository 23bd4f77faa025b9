//! Tests of the broker process helpers that start nothing: reading a broker's log.

use super::*;

#[test]
fn the_log_errors_name_the_first_error_and_its_cause() {
    let log = "[2026-12-06 03:00:00,000] INFO starting (kafka.Kafka)\n\
         [2026-12-06 03:00:01,000] ERROR [KafkaRaftServer nodeId=1] Fatal error during startup (kafka.server.KafkaRaftServer)\n\
         org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:41413: Address already in use.\n\
         \tat kafka.network.Acceptor.openServerSocket(SocketServer.scala:737)\n\
         Caused by: java.net.BindException: Address already in use\n\
         [2026-12-06 03:00:02,000] INFO shutting down (kafka.Kafka)\n";
    let errors = errors_in(log, 8);
    assert!(errors.contains("Fatal error during startup"), "{errors}");
    assert!(
        errors.contains("failed to bind to 127.0.0.1:41413"),
        "{errors}"
    );
    assert!(
        errors.contains("Caused by: java.net.BindException"),
        "{errors}"
    );
    assert!(!errors.contains("openServerSocket"), "{errors}");
    assert!(!errors.contains("shutting down"), "{errors}");
    assert_eq!(errors_in("[x] INFO fine\n", 8), "");
}
