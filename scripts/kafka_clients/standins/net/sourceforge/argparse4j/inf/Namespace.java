/* Compile-time stand-in for argparse4j's parse result (see ArgumentParsers.java). */
package net.sourceforge.argparse4j.inf;

import java.util.List;

public interface Namespace {
    String getString(String dest);

    <E> List<E> getList(String dest);
}
