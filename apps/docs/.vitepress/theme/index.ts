// The default theme without its bundled web font: pages use the system's fonts (style.css).

import type { Theme } from 'vitepress';
import DefaultTheme from 'vitepress/theme-without-fonts';
import ApiReference from './ApiReference.vue';
import GuideList from './GuideList.vue';
import './style.css';

export default {
  extends: DefaultTheme,
  enhanceApp({ app }) {
    app.component('ApiReference', ApiReference);
    app.component('GuideList', GuideList);
  },
} satisfies Theme;
