// Reads every record of a topic with Kafka's own Java consumer and prints one line per
// record ("record " first: the client logs to stdout too): partition, offset, key, value and headers, each byte string in hex ("-" for
// null). The tests compare these lines with what they published, byte for byte.
// Run as a single-file source program: java -cp <kafka jars> DumpRecords.java HOST:PORT TOPIC
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class DumpRecords {
    static String hex(byte[] b) {
        if (b == null) return "-";
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("check.crcs", "true");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo i : c.partitionsFor(args[1])) parts.add(new TopicPartition(args[1], i.partition()));
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts);
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                boolean done = true;
                for (TopicPartition tp : parts) if (c.position(tp) < end.get(tp)) done = false;
                if (done) break;
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    StringBuilder line = new StringBuilder("record ");
                    line.append(r.partition()).append(' ').append(r.offset()).append(' ')
                        .append(hex(r.key())).append(' ').append(hex(r.value()));
                    for (Header h : r.headers()) {
                        line.append(' ').append(hex(h.key().getBytes(java.nio.charset.StandardCharsets.UTF_8)))
                            .append('=').append(hex(h.value()));
                    }
                    System.out.println(line);
                }
            }
        }
    }
}
