/*
 * Runs Kafka's message generator (the generator module's MessageGenerator) without its
 * argparse4j command line: the same arguments as Kafka's build passes, positionally.
 *
 *   java -cp GENERATOR_CLASSES:JACKSON_JARS GenerateMessages PACKAGE OUTPUT INPUT TYPECLASS_GENERATORS MESSAGE_GENERATORS
 *
 * TYPECLASS_GENERATORS and MESSAGE_GENERATORS are comma-separated (empty for none).
 */
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.kafka.message.MessageGenerator;

public final class GenerateMessages {
    private GenerateMessages() {
    }

    private static List<String> names(String csv) {
        List<String> out = new ArrayList<>();
        for (String s : Arrays.asList(csv.split(","))) {
            if (!s.isEmpty()) {
                out.add(s);
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: GenerateMessages PACKAGE OUTPUT INPUT TYPECLASS_GENERATORS MESSAGE_GENERATORS");
            System.exit(2);
        }
        MessageGenerator.processDirectories(args[0], args[1], args[2], names(args[3]), names(args[4]));
    }
}
